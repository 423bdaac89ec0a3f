package sbem

import (
	"fmt"
	"strconv"
)

// Field is a leaf of a Layout: a name and a format, with an optional <MOD>.
type Field struct {
	Name   string
	Format Format
	Mod    string
}

// Array is a repeated group of fields; a single field with an empty name
// makes a plain array of values (ECG samples, RR intervals).
type Array struct {
	Name   string
	Fields []Field
}

// Layout describes the data chunks of one stream: its fixed fields, then
// each array's samples, every sample of the first array, then of the next
// (array-major), the order the sensor's notifications have.
type Layout struct {
	Stream string // MeasIMU9, MeasECGmV, TimeDetailed, ...
	Fixed  []Field
	Arrays []Array
}

// Size returns the bytes of a chunk with n samples per array.
func (l *Layout) Size(n int) int {
	s := 0
	for _, f := range l.Fixed {
		s += f.Format.Size()
	}
	for _, a := range l.Arrays {
		for _, f := range a.Fields {
			s += n * f.Format.Size()
		}
	}
	return s
}

// Writer writes the chunks of one SBEM file, with the descriptors each
// layout and sample count needs written inline the first time it is used.
// Its zero value is not ready: use NewWriter.
type Writer struct {
	next          uint16
	open, close   uint16
	leaves        map[string][][]uint16 // stream: [fixed ids], then one sample-group id per array
	groups        map[string]uint16     // stream/n: chunk id
	describedOpen bool
}

// NewWriter returns a writer for a new file; the file starts with Header.
func NewWriter() *Writer {
	return &Writer{next: 1, leaves: map[string][][]uint16{}, groups: map[string]uint16{}}
}

func (w *Writer) id() uint16 {
	id := w.next
	w.next++
	return id
}

func (w *Writer) describe(b []byte, d *Descriptor) ([]byte, uint16) {
	id := w.id()
	return AppendDescriptor(b, id, d.Text()), id
}

// AppendRecord appends one data chunk of l with n samples per array, data
// being its payload, preceded by the descriptors not written yet.
func (w *Writer) AppendRecord(b []byte, l *Layout, n int, data []byte) ([]byte, error) {
	if want := l.Size(n); len(data) != want {
		return b, fmt.Errorf("%w: %s with %d samples is %d bytes, got %d", ErrChunk, l.Stream, n, want, len(data))
	}
	key := l.Stream + "/" + strconv.Itoa(n)
	gid, ok := w.groups[key]
	if !ok {
		if !w.describedOpen {
			b, w.open = w.describe(b, &Descriptor{Path: "["})
			b, w.close = w.describe(b, &Descriptor{Path: "]"})
			w.describedOpen = true
		}
		ls, ok := w.leaves[l.Stream]
		if !ok {
			var fixed []uint16
			for i, f := range l.Fixed {
				sep := "Samples.Array."
				if i == 0 {
					sep = "Samples+Array."
				}
				var id uint16
				b, id = w.describe(b, &Descriptor{Path: sep + l.Stream + "." + f.Name, Format: f.Format, Mod: f.Mod})
				fixed = append(fixed, id)
			}
			ls = append(ls, fixed)
			for _, a := range l.Arrays {
				var members []uint16
				for i, f := range a.Fields {
					path := "Samples.Array." + l.Stream + "." + a.Name
					switch {
					case f.Name == "":
					case i == 0:
						path += "+" + f.Name
					default:
						path += "." + f.Name
					}
					var id uint16
					b, id = w.describe(b, &Descriptor{Path: path, Format: f.Format, Mod: f.Mod})
					members = append(members, id)
				}
				var sid uint16
				b, sid = w.describe(b, &Descriptor{Group: members})
				ls = append(ls, []uint16{sid})
			}
			w.leaves[l.Stream] = ls
		}
		group := append([]uint16(nil), ls[0]...)
		for _, a := range ls[1:] {
			group = append(group, w.open)
			for range n {
				group = append(group, a[0])
			}
			group = append(group, w.close)
		}
		b, gid = w.describe(b, &Descriptor{Group: group})
		w.groups[key] = gid
	}
	return AppendChunk(b, gid, data), nil
}
