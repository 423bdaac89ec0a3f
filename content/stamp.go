package content

// Timestamp returns a stream notification's Timestamp, and false for
// content without one (heart rate, records of other resources).
func Timestamp(c any) (uint32, bool) {
	switch v := c.(type) {
	case *MotionData:
		return v.Timestamp, true
	case *ECGData:
		return v.Timestamp, true
	case *ECGDataMV:
		return v.Timestamp, true
	case *TempData:
		return v.Timestamp, true
	}
	return 0, false
}

// WithTimestamp returns a copy of a stream notification stamped ts (its
// arrays shared with c, which notifications never change), or c itself
// when it has no Timestamp.
func WithTimestamp(c any, ts uint32) any {
	switch v := c.(type) {
	case *MotionData:
		w := *v
		w.Timestamp = ts
		return &w
	case *ECGData:
		w := *v
		w.Timestamp = ts
		return &w
	case *ECGDataMV:
		w := *v
		w.Timestamp = ts
		return &w
	case *TempData:
		w := *v
		w.Timestamp = ts
		return &w
	}
	return c
}
