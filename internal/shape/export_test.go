package shape

// Work is what token counting has cost s so far: bytes scanned and merge
// steps (rank look-ups and heap moves).
func (s *Shaper) Work() (bytes, steps int64) { return s.workBytes.Load(), s.workSteps.Load() }
