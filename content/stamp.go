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

// WithTimestamp returns a copy of a stream notification stamped ts, or c
// itself when it has no Timestamp. A motion notification's copy shares
// its arrays with c, which notifications never change: a pooled c is kept
// from going back to its pool (Keep), where its arrays would be reused.
// The copy is not pooled: its holds and releases do nothing.
func WithTimestamp(c any, ts uint32) any {
	switch v := c.(type) {
	case *MotionData:
		v.Keep()
		return &MotionData{Timestamp: ts, ArrayAcc: v.ArrayAcc, ArrayGyro: v.ArrayGyro, ArrayMagn: v.ArrayMagn}
	case *ECGData:
		w := &ECGData{Timestamp: ts}
		w.Samples = append(w.store[:0:len(w.store)], v.Samples...)
		return w
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
