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

// SetUserSessionClock sets the clock of server name's user sessions.
func SetUserSessionClock(m *Manager, name string, now func() time.Time) {
	s := m.server(name)
	s.users.mu.Lock()
	s.users.now = now
	s.users.mu.Unlock()
}

// UserSessions is the number of server name's user sessions.
func UserSessions(m *Manager, name string) int {
	s := m.server(name)
	s.users.mu.Lock()
	defer s.users.mu.Unlock()
	return len(s.users.m)
}
