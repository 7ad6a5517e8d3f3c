//go:build !sqliteautocheckpoint

package sqlite

// sqliteAutoCheckpoint, set by the build tag sqliteautocheckpoint (the
// ablation of bench/README.md's decision table), puts SQLite's automatic
// checkpoint back in the group commit's path instead of the checkpointer.
const sqliteAutoCheckpoint = false
