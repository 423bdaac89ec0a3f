// Package sbem reads and writes SBEM, the sensor family's binary recording
// format: an 8-byte header, then chunks of [id, length, payload]. Chunk id 0
// is a descriptor: a uint16 data id and text lines (<PTH> path, <FRM>
// format, <MOD> modifier, <GRP> list of ids) that say how the chunks of that
// data id decode. Logs carry their descriptors inline, before the first
// chunk that uses them.
//
// A chunk id or length is one byte when it is below 0xFF, else 0xFF followed
// by a uint16 id or uint32 length. The Writer keeps every id and length it
// writes below 173 (0xAD) so that readers which take the escape to be 0xAD
// read its files the same way.
package sbem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Header opens every SBEM file.
const Header = "SBEM0112"

// Escape introduces a wide chunk id or length.
const Escape = 0xFF

// SafeMax is one more than the largest id or length the Writer writes as a
// single byte.
const SafeMax = 0xAD

// DescriptorID is the chunk id of descriptors.
const DescriptorID = 0

// Errors of Parse and Decode.
var (
	ErrHeader     = errors.New("sbem: the file does not start with the SBEM header")
	ErrTruncated  = errors.New("sbem: the file ends inside a chunk")
	ErrDescriptor = errors.New("sbem: bad descriptor")
	ErrChunk      = errors.New("sbem: a data chunk does not match its descriptor")
)

// Chunk is one chunk of a file.
type Chunk struct {
	ID   uint16
	Data []byte
}

// AppendChunk appends a chunk.
func AppendChunk(b []byte, id uint16, data []byte) []byte {
	if id < Escape {
		b = append(b, byte(id))
	} else {
		b = binary.LittleEndian.AppendUint16(append(b, Escape), id)
	}
	if len(data) < Escape {
		b = append(b, byte(len(data)))
	} else {
		b = binary.LittleEndian.AppendUint32(append(b, Escape), uint32(len(data)))
	}
	return append(b, data...)
}

// AppendDescriptor appends the descriptor chunk of data id.
func AppendDescriptor(b []byte, id uint16, text string) []byte {
	d := binary.LittleEndian.AppendUint16(make([]byte, 0, 2+len(text)), id)
	return AppendChunk(b, DescriptorID, append(d, text...))
}

// Chunks splits a file into its chunks. It returns the chunks before any
// error; n is how many bytes those chunks and the header take, so a file
// whose end was torn can be cut back to n.
func Chunks(file []byte) (chunks []Chunk, n int, err error) {
	if len(file) < len(Header) || string(file[:4]) != Header[:4] {
		return nil, 0, ErrHeader
	}
	p := len(Header)
	for p < len(file) {
		q := p
		var id uint16
		if file[q] < Escape {
			id = uint16(file[q])
			q++
		} else {
			if q+3 > len(file) {
				return chunks, p, ErrTruncated
			}
			id = binary.LittleEndian.Uint16(file[q+1:])
			q += 3
		}
		if q >= len(file) {
			return chunks, p, ErrTruncated
		}
		var size int
		if file[q] < Escape {
			size = int(file[q])
			q++
		} else {
			if q+5 > len(file) {
				return chunks, p, ErrTruncated
			}
			size = int(binary.LittleEndian.Uint32(file[q+1:]))
			q += 5
		}
		if size > len(file)-q {
			return chunks, p, ErrTruncated
		}
		chunks = append(chunks, Chunk{ID: id, Data: file[q : q+size]})
		p = q + size
	}
	return chunks, p, nil
}

// Format is a value format of a <FRM> line.
type Format string

// The formats.
const (
	Int8    Format = "int8"
	Uint8   Format = "uint8"
	Int16   Format = "int16"
	Uint16  Format = "uint16"
	Int32   Format = "int32"
	Uint32  Format = "uint32"
	Int64   Format = "int64"
	Uint64  Format = "uint64"
	Float32 Format = "float32"
	Float64 Format = "float64"
	Bool    Format = "bool"
)

// Size returns the width of f in bytes, 0 for an unknown format.
func (f Format) Size() int {
	switch f {
	case Int8, Uint8, Bool:
		return 1
	case Int16, Uint16:
		return 2
	case Int32, Uint32, Float32:
		return 4
	case Int64, Uint64, Float64:
		return 8
	}
	return 0
}

func (f Format) read(b []byte) float64 {
	switch f {
	case Int8:
		return float64(int8(b[0]))
	case Uint8, Bool:
		return float64(b[0])
	case Int16:
		return float64(int16(binary.LittleEndian.Uint16(b)))
	case Uint16:
		return float64(binary.LittleEndian.Uint16(b))
	case Int32:
		return float64(int32(binary.LittleEndian.Uint32(b)))
	case Uint32:
		return float64(binary.LittleEndian.Uint32(b))
	case Int64:
		return float64(int64(binary.LittleEndian.Uint64(b)))
	case Uint64:
		return float64(binary.LittleEndian.Uint64(b))
	case Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case Float64:
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	return 0
}

// Descriptor is a parsed descriptor: a leaf (Path and Format) or a group.
type Descriptor struct {
	Path   string
	Format Format
	Mod    string
	Group  []uint16
}

// Scale is the factor of the descriptor's <MOD> decode expression "x*F",
// 1 when there is none.
func (d *Descriptor) Scale() float64 {
	expr, _, _ := strings.Cut(d.Mod, ",")
	if f, ok := strings.CutPrefix(expr, "x*"); ok {
		if v, err := strconv.ParseFloat(f, 64); err == nil {
			return v
		}
	}
	return 1
}

// ParseDescriptor parses a descriptor chunk's data.
func ParseDescriptor(data []byte) (uint16, *Descriptor, error) {
	if len(data) < 2 {
		return 0, nil, fmt.Errorf("%w: %d bytes, at least the 2 of the data id", ErrDescriptor, len(data))
	}
	id := binary.LittleEndian.Uint16(data)
	d := &Descriptor{}
	for line := range strings.SplitSeq(strings.TrimRight(string(data[2:]), "\x00"), "\n") {
		switch {
		case line == "":
		case strings.HasPrefix(line, "<PTH>"):
			d.Path = line[5:]
		case strings.HasPrefix(line, "<FRM>"):
			f, _, _ := strings.Cut(line[5:], ",")
			d.Format = Format(f)
		case strings.HasPrefix(line, "<MOD>"):
			d.Mod = line[5:]
		case strings.HasPrefix(line, "<GRP>"):
			for s := range strings.SplitSeq(line[5:], ",") {
				v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
				if err != nil {
					return 0, nil, fmt.Errorf("%w: id %d: group member %q is not a data id", ErrDescriptor, id, s)
				}
				d.Group = append(d.Group, uint16(v))
			}
		default:
			return 0, nil, fmt.Errorf("%w: id %d: line %q; allowed: <PTH>, <FRM>, <MOD>, <GRP>", ErrDescriptor, id, line)
		}
	}
	return id, d, nil
}

// Text returns the descriptor's text as a descriptor chunk carries it.
func (d *Descriptor) Text() string {
	var b strings.Builder
	if d.Group != nil {
		b.WriteString("<GRP>")
		for i, id := range d.Group {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(int(id)))
		}
		b.WriteByte('\n')
		return b.String()
	}
	b.WriteString("<PTH>" + d.Path + "\n")
	if d.Format != "" {
		b.WriteString("<FRM>" + string(d.Format) + "\n")
	}
	if d.Mod != "" {
		b.WriteString("<MOD>" + d.Mod + "\n")
	}
	return b.String()
}

// Value is one decoded value of a data chunk.
type Value struct {
	Path  string  // the leaf's path with the tooling prefixes and '+' marks removed, e.g. MeasIMU9.ArrayAcc.x
	Value float64 // scaled by the leaf's <MOD> factor
}

// Record is one decoded data chunk.
type Record struct {
	ID     uint16
	Values []Value
}

// Name returns the path without "Samples+Array.", "Samples.Array." or
// "Samples." and without '+' marks.
func Name(path string) string {
	for _, p := range []string{"Samples+Array.", "Samples.Array.", "Samples+", "Samples."} {
		if s, ok := strings.CutPrefix(path, p); ok {
			path = s
			break
		}
	}
	return strings.ReplaceAll(path, "+", ".")
}

// Decode decodes a whole file: its descriptors and every data chunk. A
// chunk whose size differs from its descriptor's layout is an ErrChunk.
func Decode(file []byte) ([]Record, error) {
	chunks, _, err := Chunks(file)
	if err != nil {
		return nil, err
	}
	desc := map[uint16]*Descriptor{}
	var out []Record
	for _, c := range chunks {
		if c.ID == DescriptorID {
			id, d, err := ParseDescriptor(c.Data)
			if err != nil {
				return out, err
			}
			desc[id] = d
			continue
		}
		var leaves []*Descriptor
		if err := expand(desc, c.ID, &leaves, 0); err != nil {
			return out, err
		}
		size := 0
		for _, l := range leaves {
			size += l.Format.Size()
		}
		if size != len(c.Data) {
			return out, fmt.Errorf("%w: chunk id %d has %d bytes, its layout %d", ErrChunk, c.ID, len(c.Data), size)
		}
		r := Record{ID: c.ID, Values: make([]Value, 0, len(leaves))}
		p := 0
		for _, l := range leaves {
			n := l.Format.Size()
			if n == 0 {
				continue
			}
			r.Values = append(r.Values, Value{Path: Name(l.Path), Value: l.Format.read(c.Data[p:]) * l.Scale()})
			p += n
		}
		out = append(out, r)
	}
	return out, nil
}

func expand(desc map[uint16]*Descriptor, id uint16, leaves *[]*Descriptor, depth int) error {
	d := desc[id]
	switch {
	case depth > 16:
		return fmt.Errorf("%w: groups nest deeper than 16 at id %d", ErrDescriptor, id)
	case d == nil:
		return fmt.Errorf("%w: id %d has no descriptor", ErrChunk, id)
	case d.Group != nil:
		for _, m := range d.Group {
			if err := expand(desc, m, leaves, depth+1); err != nil {
				return err
			}
		}
	case d.Path == "[" || d.Path == "]" || strings.HasPrefix(d.Path, "+"):
		// repetition markers and dummy descriptors carry no bytes
	case d.Format.Size() == 0:
		return fmt.Errorf("%w: id %d: format %q; allowed: int8..uint64, float32, float64, bool", ErrDescriptor, id, d.Format)
	default:
		*leaves = append(*leaves, d)
	}
	return nil
}
