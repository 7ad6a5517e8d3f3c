//go:build sqliteautocheckpoint

package sqlite

// sqliteAutoCheckpoint: see checkpoint_mode.go. Only for the ablation
// (BENCH_ABLATE=auto-checkpoint:sqliteautocheckpoint); the checkpointer's
// tests fail with it.
const sqliteAutoCheckpoint = true
