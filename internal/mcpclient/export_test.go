package mcpclient

import "time"

// SetTiming shortens the Manager's waits for tests.
func SetTiming(m *Manager, syncWait, backoffMin, backoffMax time.Duration) {
	m.syncWait, m.backoff.Base, m.backoff.Max = syncWait, backoffMin, backoffMax
}

// MaxDrains is maxDrains, for TestMCPCallStreamsLeftOpenAreBounded.
const MaxDrains = maxDrains

// SetSDKCalls sends every tools/call of m through the SDK (on) or lets
// calls take the hot path where it serves them (off).
func SetSDKCalls(m *Manager, on bool) { m.sdkCalls = on }
