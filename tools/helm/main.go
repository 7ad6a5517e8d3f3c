// Command helm is the part of the Helm CLI that deployments/helm_test.go
// runs — `helm lint --strict` and `helm template` of a chart directory with
// -f, --set and --set-file values, and `helm version` — built from Helm's
// own library packages (helm.sh/helm/v3/pkg/...) at the pinned version
// this module requires. The full CLI (helm.sh/helm/v3/cmd/helm) links the
// Kubernetes client, kubectl and the OCI registry client besides; compiling
// them cost a machine with an empty Go build cache about 170 s of CPU on
// top of the standard library, this about 105 s (docs/development.md).
//
// What each command does is what the CLI's does, through the same
// functions, with a cluster never contacted:
//   - lint: pkg/action.Lint.Run for one chart directory
//     (lint.AllWithKubeVersionAndSchemaValidation; --strict fails on
//     warnings too);
//   - template: pkg/action.Install.RunWithContext with ClientOnly and
//     DryRun as cmd/helm/template.go sets them (dependencies processed,
//     chartutil.DefaultCapabilities, the values checked against
//     values.schema.json, engine.Render, NOTES.txt left out,
//     releaseutil.SortManifests in install order), printed as the CLI
//     prints them ("---\n# Source: …"), hooks after the manifests;
//   - values: pkg/cli/values.Options.MergeValues (-f files merged in
//     order, then --set, then --set-file), local files only.
//
// It is built and run by deployments/helm_test.go (`go tool -n helm` in
// this directory: the go command builds it once into its build cache and
// every later run reuses it). A separate module so that Helm's
// dependencies stay out of toolrouterd's go.mod.
//
//	helm version [--template '{{.Version}}']
//	helm lint [--strict] CHART [-f FILE]... [--set K=V]... [--set-file K=FILE]...
//	helm template NAME CHART [--namespace NS] [-f FILE]... [--set K=V]... [--set-file K=FILE]...
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"text/template"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: helm version, lint or template")
	}
	f, err := parseFlags(args[1:])
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	switch args[0] {
	case "version":
		return version(f, out)
	case "lint":
		return lintCmd(f, out)
	case "template":
		return templateCmd(f, out)
	}
	return fmt.Errorf("unknown command %q: this helm has version, lint and template", args[0])
}

// flags are the command line's flags and positional arguments.
type flags struct {
	args                   []string
	valueFiles, set, files []string
	namespace, template    string
	strict                 bool
}

func parseFlags(args []string) (flags, error) {
	var f flags
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "-") {
			f.args = append(f.args, a)
			continue
		}
		if name == "--strict" {
			f.strict = true
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				return f, fmt.Errorf("flag %s needs a value", name)
			}
			i++
			value = args[i]
		}
		switch name {
		case "-f", "--values":
			f.valueFiles = append(f.valueFiles, value)
		case "--set":
			f.set = append(f.set, value)
		case "--set-file":
			f.files = append(f.files, value)
		case "-n", "--namespace":
			f.namespace = value
		case "--template":
			f.template = value
		default:
			return f, fmt.Errorf("unknown flag %s", name)
		}
	}
	return f, nil
}

// helmVersion is the version of Helm's module linked in.
func helmVersion() (string, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", errors.New("no build information")
	}
	for _, m := range info.Deps {
		if m.Path == "helm.sh/helm/v3" {
			if m.Replace != nil {
				return m.Replace.Version, nil
			}
			return m.Version, nil
		}
	}
	return "", errors.New("helm.sh/helm/v3 is not in the build information")
}

func version(f flags, out io.Writer) error {
	v, err := helmVersion()
	if err != nil {
		return err
	}
	if f.template == "" {
		_, err = fmt.Fprintf(out, "version.BuildInfo{Version:%q}\n", v)
		return err
	}
	tmpl, err := template.New("version").Parse(f.template)
	if err != nil {
		return fmt.Errorf("parsing --template: %w", err)
	}
	return tmpl.Execute(out, struct{ Version string }{v})
}

// values merges the values as pkg/cli/values.Options.MergeValues does:
// each -f file over the previous ones (maps merged key by key), then each
// --set, then each --set-file.
func values(f flags) (map[string]any, error) {
	base := map[string]any{}
	for _, file := range f.valueFiles {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		current := map[string]any{}
		if err := yaml.Unmarshal(data, &current); err != nil {
			return nil, fmt.Errorf("failed to parse %s: %w", file, err)
		}
		base = mergeMaps(base, current)
	}
	for _, v := range f.set {
		if err := strvals.ParseInto(v, base); err != nil {
			return nil, fmt.Errorf("failed parsing --set data: %w", err)
		}
	}
	for _, v := range f.files {
		reader := func(rs []rune) (any, error) {
			data, err := os.ReadFile(string(rs))
			return string(data), err
		}
		if err := strvals.ParseIntoFile(v, base, reader); err != nil {
			return nil, fmt.Errorf("failed parsing --set-file data: %w", err)
		}
	}
	return base, nil
}

// mergeMaps is pkg/cli/values's: b's keys over a's, maps merged.
func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if v, ok := v.(map[string]any); ok {
			if bv, ok := out[k]; ok {
				if bv, ok := bv.(map[string]any); ok {
					out[k] = mergeMaps(bv, v)
					continue
				}
			}
		}
		out[k] = v
	}
	return out
}

// lintCmd is `helm lint [--strict] CHART` for a chart directory
// (cmd/helm/lint.go, pkg/action/lint.go), in the namespace "default" as
// the CLI's settings give it.
func lintCmd(f flags, out io.Writer) error {
	if len(f.args) != 1 {
		return errors.New("lint: want one chart directory")
	}
	vals, err := values(f)
	if err != nil {
		return err
	}
	dir := f.args[0]
	if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err != nil {
		return fmt.Errorf("unable to check Chart.yaml file in chart: %w", err)
	}
	namespace := f.namespace
	if namespace == "" {
		namespace = "default"
	}
	linter := lint.AllWithKubeVersionAndSchemaValidation(dir, vals, namespace, nil, false)
	lowest := support.ErrorSev
	if f.strict {
		lowest = support.WarningSev
	}
	fmt.Fprintf(out, "==> Linting %s\n", dir)
	failed := 0
	for _, msg := range linter.Messages {
		fmt.Fprintln(out, msg)
		if msg.Severity >= lowest {
			failed++
		}
	}
	fmt.Fprintln(out)
	if failed > 0 {
		return errors.New("1 chart(s) linted, 1 chart(s) failed")
	}
	fmt.Fprintln(out, "1 chart(s) linted, 0 chart(s) failed")
	return nil
}

// templateCmd is `helm template NAME CHART` for a chart directory
// (cmd/helm/template.go and pkg/action.Install with ClientOnly).
func templateCmd(f flags, out io.Writer) error {
	if len(f.args) != 2 {
		return errors.New("template: want a release name and a chart directory")
	}
	name, dir := f.args[0], f.args[1]
	namespace := f.namespace
	if namespace == "" {
		namespace = "default"
	}
	vals, err := values(f)
	if err != nil {
		return err
	}
	chrt, err := loader.Load(dir)
	if err != nil {
		return err
	}
	if t := chrt.Metadata.Type; t != "" && t != "application" {
		return fmt.Errorf("%s charts are not installable", t)
	}
	if err := chartutil.ProcessDependenciesWithMerge(chrt, vals); err != nil {
		return err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	if chrt.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(chrt.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", chrt.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	options := chartutil.ReleaseOptions{Name: name, Namespace: namespace, Revision: 1, IsInstall: true}
	toRender, err := chartutil.ToRenderValuesWithSchemaValidation(chrt, vals, options, caps, false)
	if err != nil {
		return err
	}
	return render(chrt, toRender, out)
}

// render is pkg/action's renderResources for a client-only install
// without CRDs, output directory or post-renderer, then the hooks as
// cmd/helm/template.go prints them.
func render(chrt *chart.Chart, vals chartutil.Values, out io.Writer) error {
	var e engine.Engine
	files, err := e.Render(chrt, vals)
	if err != nil {
		return err
	}
	// The notes are the release's, not a manifest (the chart's and its
	// subcharts').
	for k := range files {
		if strings.HasSuffix(k, "NOTES.txt") {
			delete(files, k)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	for _, h := range hooks {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	_, err = out.Write(b.Bytes())
	return err
}
