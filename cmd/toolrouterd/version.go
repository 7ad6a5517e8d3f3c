package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// version and commit are set at link time for release builds, where the
// build has no VCS information (the Docker build context leaves out .git):
//
//	go build -ldflags "-X main.version=v1.2.0 -X main.commit=$(git rev-parse HEAD)" ./cmd/toolrouterd
//
// Empty, they come from the build info Go stamps into every binary.
var version, commit string

// buildVersion is what `toolrouterd version` prints and /mcp reports.
type buildVersion struct {
	Version   string // the module version: a tag, a pseudo-version, or "devel"
	Commit    string // vcs.revision; "" when built without VCS information
	Modified  bool   // vcs.modified: the work tree had uncommitted changes
	GoVersion string
}

// readVersion merges the link-time overrides with bi (debug.ReadBuildInfo).
func readVersion(bi *debug.BuildInfo, ok bool, version, commit string) buildVersion {
	v := buildVersion{Version: "devel"}
	if ok {
		v.GoVersion = bi.GoVersion
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		v.Version = version
	}
	if commit != "" {
		v.Commit, v.Modified = commit, false
	}
	return v
}

// String is the one-line form /mcp reports as serverInfo.version:
// "v1.2.0 (0123456789ab)", "+modified" when the tree was dirty.
func (v buildVersion) String() string {
	if v.Commit == "" {
		return v.Version
	}
	c := v.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if v.Modified {
		c += "+modified"
	}
	return fmt.Sprintf("%s (%s)", v.Version, c)
}

func runVersion(stdout io.Writer) error {
	v := currentVersion()
	commit := v.Commit
	switch {
	case commit == "":
		commit = "unknown (built without VCS information; set -ldflags -X main.commit=…)"
	case v.Modified:
		commit += " (modified: uncommitted changes)"
	}
	_, err := fmt.Fprintf(stdout, "toolrouterd %s\ncommit %s\ngo %s\n", v.Version, commit, v.GoVersion)
	return err
}

func currentVersion() buildVersion {
	bi, ok := debug.ReadBuildInfo()
	return readVersion(bi, ok, version, commit)
}
