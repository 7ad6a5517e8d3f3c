// Command typecheck proves that packages build for other operating systems
// without compiling them: for each GOOS it is given, with cgo off (as in a
// cross build), it type-checks the named packages and every package they
// import, the standard library included, from source, function bodies and
// all, and prints each error with its file and line.
//
//	go run ./scripts/typecheck -goos windows,darwin ./cmd/...
//
// What a cross build could fail on in this module's code is what the type
// checker sees: a file left out by its build constraints (a name then
// undefined, a package with no file for that OS), an identifier a package
// has on one OS only (syscall.Kill, unix.Getpgid), a method or constant
// that differs by OS. go/types is the checker the compiler runs first; the
// compiler's later work (code generation, linking pure Go) does not depend
// on which OS's files were chosen. It costs a few seconds of CPU per OS
// where compiling costs the standard library and every dependency again
// per OS (docs/development.md, on cross builds).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/tools/go/packages"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("typecheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	goos := fs.String("goos", "windows,darwin", "comma-separated GOOS values to type-check for")
	dir := fs.String("C", "", "directory to run in (default: the current one)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "typecheck: no package patterns")
		return 2
	}
	failed := false
	for _, g := range strings.Split(*goos, ",") {
		n, errs, err := check(*dir, g, fs.Args())
		if err != nil {
			fmt.Fprintln(stderr, "typecheck:", err)
			return 1
		}
		for _, e := range errs {
			fmt.Fprintf(stderr, "GOOS=%s: %s\n", g, e)
		}
		if len(errs) > 0 {
			failed = true
			continue
		}
		fmt.Fprintf(stdout, "GOOS=%s: %d packages type-check\n", g, n)
	}
	if failed {
		return 1
	}
	return 0
}

// check type-checks patterns, run from dir, and everything they import, for
// goos with cgo off; it returns how many packages it checked and their
// errors (list, parse and type errors), each naming its position.
func check(dir, goos string, patterns []string) (int, []string, error) {
	if goos == "" {
		return 0, nil, errors.New("empty GOOS")
	}
	cfg := &packages.Config{
		// Types with Deps: every package from source, bodies included (no
		// export data, so nothing is compiled).
		Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps | packages.NeedTypes,
		Dir:  dir,
		Env:  append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0"),
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return 0, nil, fmt.Errorf("load %s for GOOS=%s: %w", strings.Join(patterns, " "), goos, err)
	}
	n := 0
	var errs []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		n++
		for _, e := range p.Errors {
			errs = append(errs, e.Error())
		}
	})
	return n, errs, nil
}
