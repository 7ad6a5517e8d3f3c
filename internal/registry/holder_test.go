package registry_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/registry"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := replaceFile(path, content); err != nil {
		t.Fatal(err)
	}
}

// replaceFile writes then renames, as an operator's tooling (or a
// ConfigMap) does, so a concurrent Reload never reads half a file.
func replaceFile(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func oneTool(name string) string {
	return fmt.Sprintf("tools:\n  - name: %s\n    endpoint: http://tools.example/%s\n", name, name)
}

func TestHolderReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.yaml")
	writeFile(t, path, oneTool("first"))
	initial := load(t, path, nil)
	h := registry.NewHolder(path, nil, initial)
	if h.Current() != initial {
		t.Fatal("Current() is not the initial registry")
	}

	// A bad file is rejected and the old registry stays in force.
	writeFile(t, path, oneTool("second")+"    timeout: never\n")
	err := h.Reload()
	var ps registry.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Reload of a bad file = %v, want Problems", err)
	}
	if h.Current() != initial {
		t.Error("a bad file replaced the registry")
	}
	if _, ok := h.Current().Lookup("first"); !ok {
		t.Error("the old registry lost its tool")
	}

	// A missing file too.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := h.Reload(); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Reload of a missing file = %v, want not-exist", err)
	}
	if h.Current() != initial {
		t.Error("a missing file replaced the registry")
	}

	// A good file is swapped in.
	writeFile(t, path, oneTool("second"))
	if err := h.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	cur := h.Current()
	if _, ok := cur.Lookup("second"); !ok {
		t.Error("the new registry lacks the new tool")
	}
	if _, ok := cur.Lookup("first"); ok {
		t.Error("the new registry kept the old tool")
	}
	// The registry a caller already holds is unchanged.
	if _, ok := initial.Lookup("first"); !ok {
		t.Error("the old registry changed under its holder")
	}
}

func TestHolderReloadExpandsWithItsGetenv(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.yaml")
	writeFile(t, path, oneTool("t")+"    headers: {X-Key: \"${KEY}\"}\n")
	var key atomic.Value
	key.Store("one")
	getenv := func(k string) string {
		if k == "KEY" {
			return key.Load().(string)
		}
		return ""
	}
	h := registry.NewHolder(path, getenv, nil)
	if len(h.Current().Tools()) != 0 {
		t.Fatal("NewHolder with a nil registry does not start empty")
	}
	if err := h.Reload(); err != nil {
		t.Fatal(err)
	}
	if tool, _ := h.Current().Lookup("t"); tool.Headers["X-Key"] != "one" {
		t.Errorf("X-Key = %q", tool.Headers["X-Key"])
	}
	key.Store("")
	if err := h.Reload(); err == nil {
		t.Error("Reload succeeded with the variable unset")
	}
	if tool, _ := h.Current().Lookup("t"); tool.Headers["X-Key"] != "one" {
		t.Errorf("after a failed reload X-Key = %q", tool.Headers["X-Key"])
	}
}

// TestHolderConcurrent reloads while readers use the registry; run with
// -race. Every registry a reader sees is complete: both of its tools.
func TestHolderConcurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.yaml")
	good := func(gen int) string {
		return fmt.Sprintf("tools:\n  - name: a/%d\n    endpoint: http://tools.example/a\n  - name: b/%d\n    endpoint: http://tools.example/b\n", gen, gen)
	}
	writeFile(t, path, good(0))
	h := registry.NewHolder(path, nil, load(t, path, nil))

	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				r := h.Current()
				tools := r.Tools()
				if len(tools) != 2 {
					t.Errorf("a reader saw %d tools", len(tools))
					return
				}
				var gen int
				if _, err := fmt.Sscanf(tools[0].Name, "a/%d", &gen); err != nil {
					t.Errorf("tool %q", tools[0].Name)
					return
				}
				if _, ok := r.Lookup(fmt.Sprintf("b/%d", gen)); !ok {
					t.Errorf("registry of generation %d lacks b/%d", gen, gen)
					return
				}
			}
		}()
	}
	var reloaders sync.WaitGroup
	for w := range 2 {
		reloaders.Add(1)
		go func() {
			defer reloaders.Done()
			for i := range 50 {
				if w == 0 {
					content := good(i + 1)
					if i%3 == 2 {
						content = "tools: [oops\n"
					}
					if err := replaceFile(path, content); err != nil {
						t.Error(err)
						return
					}
				}
				_ = h.Reload() // bad files are expected; readers check the rest
			}
		}()
	}
	reloaders.Wait()
	stop.Store(true)
	wg.Wait()

	writeFile(t, path, good(99))
	if err := h.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Current().Lookup("a/99"); !ok {
		t.Error("the last good file is not in force")
	}
}

// TestHolderReloadIf: a registry accept refuses is not swapped in, and
// accept's error is returned; one it takes is.
func TestHolderReloadIf(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.yaml")
	writeFile(t, path, oneTool("first"))
	initial := load(t, path, nil)
	h := registry.NewHolder(path, nil, initial)
	writeFile(t, path, oneTool("second"))
	refuse := errors.New("refused")
	var seen *registry.Registry
	if err := h.ReloadIf(func(r *registry.Registry) error { seen = r; return refuse }); err != refuse {
		t.Fatalf("ReloadIf = %v, want accept's error", err)
	}
	if _, ok := seen.Lookup("second"); !ok || h.Current() != initial {
		t.Fatal("accept did not see the new file, or a refused registry was swapped in")
	}
	if err := h.ReloadIf(func(*registry.Registry) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Current().Lookup("second"); !ok {
		t.Error("an accepted registry was not swapped in")
	}
}
