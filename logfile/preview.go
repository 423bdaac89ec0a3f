package logfile

// Preview is what a log holds, decoded: its streams summed up and its
// first records.
type Preview struct {
	Device  string          `json:"device"`
	ID      uint32          `json:"id"`
	Size    int             `json:"size"`
	Records int             `json:"records"`
	Streams []StreamSummary `json:"streams"`
	// Head are the first records, at most PreviewRecords.
	Head []Record `json:"head"`
}

// StreamSummary sums up one stream of a log.
type StreamSummary struct {
	Stream  string `json:"stream"`
	Records int    `json:"records"`
	// Fields counts the values of each field, in the log's order.
	Fields []FieldCount `json:"fields"`
	// First and Last are the device times (ms) of its first and last
	// records with a timestamp.
	First *float64 `json:"first,omitempty"`
	Last  *float64 `json:"last,omitempty"`
}

// FieldCount is how many values a field has in a log.
type FieldCount struct {
	Name   string `json:"name"`
	Values int    `json:"values"`
}

// PreviewRecords is how many records a preview shows.
const PreviewRecords = 20

// NewPreview decodes log id of device serial into its summary.
func NewPreview(serial string, id uint32, log []byte) (*Preview, error) {
	recs, err := Decode(log)
	if err != nil {
		return nil, err
	}
	p := &Preview{Device: serial, ID: id, Size: len(log), Records: len(recs), Streams: []StreamSummary{}, Head: recs[:min(len(recs), PreviewRecords)]}
	if p.Head == nil {
		p.Head = []Record{}
	}
	index := map[string]int{}
	for _, r := range recs {
		i, ok := index[r.Stream]
		if !ok {
			i = len(p.Streams)
			index[r.Stream] = i
			p.Streams = append(p.Streams, StreamSummary{Stream: r.Stream})
		}
		s := &p.Streams[i]
		s.Records++
		if r.Timestamp != nil {
			if s.First == nil {
				s.First = r.Timestamp
			}
			s.Last = r.Timestamp
		}
		for _, f := range r.Fields {
			k := 0
			for k < len(s.Fields) && s.Fields[k].Name != f.Name {
				k++
			}
			if k == len(s.Fields) {
				s.Fields = append(s.Fields, FieldCount{Name: f.Name})
			}
			s.Fields[k].Values += len(f.Values)
		}
	}
	return p, nil
}
