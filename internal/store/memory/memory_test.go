package memory_test

import (
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Database: func(t *testing.T, now func() time.Time) func() store.Store {
			m := memory.New()
			m.Now = now
			return func() store.Store { return m }
		},
	})
}
