package mcpclient

import "time"

// SetTiming shortens the Manager's waits for tests.
func SetTiming(m *Manager, syncWait, backoffMin, backoffMax time.Duration) {
	m.syncWait, m.backoff.Base, m.backoff.Max = syncWait, backoffMin, backoffMax
}

// MaxDrains is maxDrains, for TestMCPCallStreamsLeftOpenAreBounded.
const MaxDrains = maxDrains
