package deployments_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	yaml3 "go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/toolrouterd/toolrouterd/internal/config"
	"github.com/toolrouterd/toolrouterd/internal/registry"
)

const k8sDir = "kubernetes"

// decodeStrict decodes one Kubernetes manifest into its API type: YAML to
// JSON (duplicate keys rejected), then JSON with unknown fields rejected,
// so a misspelt or misplaced field fails here rather than being dropped by
// the API server.
func decodeStrict(t *testing.T, file string, into any, apiVersion, kind string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(k8sDir, file))
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`(?m)^---`).Match(data) {
		t.Fatalf("%s: one document per file", file)
	}
	tm, err := decodeStrictData(data, into)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if tm.APIVersion != apiVersion || tm.Kind != kind {
		t.Fatalf("%s: %s %s, want %s %s", file, tm.APIVersion, tm.Kind, apiVersion, kind)
	}
}

// decodeStrictData is decodeStrict's decoding of one YAML document; it
// returns the document's apiVersion and kind.
func decodeStrictData(data []byte, into any) (metav1.TypeMeta, error) {
	var tm metav1.TypeMeta
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return tm, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return tm, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return tm, errors.New("trailing data")
	}
	return tm, json.Unmarshal(js, &tm)
}

type manifests struct {
	deploy    appsv1.Deployment
	service   corev1.Service
	configMap corev1.ConfigMap
	secret    corev1.Secret
	hpa       autoscalingv2.HorizontalPodAutoscaler
	pdb       policyv1.PodDisruptionBudget
}

func load(t *testing.T) *manifests {
	t.Helper()
	var m manifests
	decodeStrict(t, "deployment.yaml", &m.deploy, "apps/v1", "Deployment")
	decodeStrict(t, "service.yaml", &m.service, "v1", "Service")
	decodeStrict(t, "configmap.yaml", &m.configMap, "v1", "ConfigMap")
	decodeStrict(t, "secret.example.yaml", &m.secret, "v1", "Secret")
	decodeStrict(t, "hpa.yaml", &m.hpa, "autoscaling/v2", "HorizontalPodAutoscaler")
	decodeStrict(t, "pdb.yaml", &m.pdb, "policy/v1", "PodDisruptionBudget")
	return &m
}

// configKeys is every TOOLROUTER_* variable the binary reads.
func configKeys(t *testing.T) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	for _, v := range config.Vars() {
		keys[v.Name] = true
	}
	if !keys["TOOLROUTER_STORE"] || !keys["TOOLROUTER_SHUTDOWN_TIMEOUT"] {
		t.Fatalf("config keys: %v", keys)
	}
	return keys
}

func container(t *testing.T, m *manifests) corev1.Container {
	t.Helper()
	cs := m.deploy.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Name != "toolrouterd" {
		t.Fatalf("want one container toolrouterd, got %d", len(cs))
	}
	return cs[0]
}

func env(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

func TestDeployment(t *testing.T) {
	m := load(t)
	d := m.deploy
	pod := d.Spec.Template.Spec
	c := container(t, m)

	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("replicas %v, want 3", d.Spec.Replicas)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("selector %v does not match the pod labels %v (%v)", d.Spec.Selector, d.Spec.Template.Labels, err)
	}
	if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
		t.Error("enableServiceLinks must be false: envconfig would read the injected {SERVICE}_PORT variables")
	}
	if c.Image == "" {
		t.Error("no image")
	}

	// Probes on the named port.
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("ports %+v, want http 8080", c.Ports)
	}
	if e, _ := env(c, "TOOLROUTER_ADDR"); e.Value != ":8080" {
		t.Errorf("TOOLROUTER_ADDR %q, want :8080 (the container port)", e.Value)
	}
	probe := func(name string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s probe: want an httpGet on %s", name, path)
			return
		}
		if p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe: %s on port %s, want %s on http", name, p.HTTPGet.Path, p.HTTPGet.Port.String(), path)
		}
	}
	probe("readiness", c.ReadinessProbe, "/readyz")
	probe("liveness", c.LivenessProbe, "/healthz")
	if c.StartupProbe != nil {
		probe("startup", c.StartupProbe, "/healthz")
	}

	// Resources: requests (the HPA's CPU utilization needs them) and limits.
	for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := rl[r]; !ok || q.IsZero() {
				t.Errorf("resources: %s missing in %v", r, rl)
			}
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.Cmp(lim) > 0 {
			t.Errorf("%s request %s above limit %s", r, req.String(), lim.String())
		}
	}

	// Security: non-root 65532, read-only root, no escalation, no capabilities, seccomp.
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || sc == nil {
		t.Fatal("pod and container securityContext required")
	}
	for what, v := range map[string]*bool{"pod runAsNonRoot": psc.RunAsNonRoot, "runAsNonRoot": sc.RunAsNonRoot,
		"readOnlyRootFilesystem": sc.ReadOnlyRootFilesystem} {
		if v == nil || !*v {
			t.Errorf("%s must be true", what)
		}
	}
	for what, v := range map[string]*int64{"pod runAsUser": psc.RunAsUser, "runAsUser": sc.RunAsUser} {
		if v == nil || *v != 65532 {
			t.Errorf("%s must be 65532 (distroless nonroot)", what)
		}
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation must be false")
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Error("privileged")
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		t.Errorf("capabilities %+v, want drop [ALL]", sc.Capabilities)
	}
	for what, s := range map[string]*corev1.SeccompProfile{"pod": psc.SeccompProfile, "container": sc.SeccompProfile} {
		if s == nil || s.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s seccompProfile %+v, want RuntimeDefault", what, s)
		}
	}
	// A read-only root still needs a writable /tmp; every other mount is read-only.
	for _, vm := range c.VolumeMounts {
		if vm.MountPath != "/tmp" && !vm.ReadOnly {
			t.Errorf("mount %s is writable", vm.MountPath)
		}
	}

	// Every TOOLROUTER_* variable exists, and its value (when literal) parses.
	keys := configKeys(t)
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "TOOLROUTER_") && !keys[e.Name] {
			t.Errorf("env %s: toolrouterd has no such setting", e.Name)
		}
	}

	// GOMEMLIMIT follows the container's memory limit (issue 14, item 5).
	if e, ok := env(c, "GOMEMLIMIT"); !ok || e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef == nil ||
		e.ValueFrom.ResourceFieldRef.Resource != "limits.memory" || !e.ValueFrom.ResourceFieldRef.Divisor.IsZero() && e.ValueFrom.ResourceFieldRef.Divisor.Value() != 1 {
		t.Errorf("GOMEMLIMIT %+v, want it from resourceFieldRef limits.memory in bytes", e)
	}
	if c.Resources.Limits.Memory().IsZero() {
		t.Error("no memory limit: GOMEMLIMIT would have nothing to follow")
	}

	// Graceful shutdown fits in the grace period: preStop pause + shutdown timeout.
	shutdown := 30 * time.Second // the default
	if e, ok := env(c, "TOOLROUTER_SHUTDOWN_TIMEOUT"); ok {
		if shutdown, err = time.ParseDuration(e.Value); err != nil {
			t.Fatal(err)
		}
	}
	var preStop time.Duration
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		h := c.Lifecycle.PreStop
		if h.Exec != nil {
			t.Error("preStop exec: the distroless image has no shell or sleep")
		}
		if h.Sleep != nil {
			preStop = time.Duration(h.Sleep.Seconds) * time.Second
		}
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= shutdown+preStop {
		t.Errorf("terminationGracePeriodSeconds %v must exceed the preStop pause %v + TOOLROUTER_SHUTDOWN_TIMEOUT %v", g, preStop, shutdown)
	}
}

func TestDeploymentConfigMapAndSecrets(t *testing.T) {
	m := load(t)
	c := container(t, m)
	pod := m.deploy.Spec.Template.Spec

	// TOOLROUTER_REGISTRY is a file of the ConfigMap's mount.
	reg, ok := env(c, "TOOLROUTER_REGISTRY")
	if !ok || reg.Value != "/etc/toolrouterd/registry.yaml" {
		t.Fatalf("TOOLROUTER_REGISTRY %q, want /etc/toolrouterd/registry.yaml", reg.Value)
	}
	var key string
	for _, vm := range c.VolumeMounts {
		rel, err := filepath.Rel(vm.MountPath, reg.Value)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		if vm.SubPath != "" {
			t.Errorf("mount %s uses subPath: ConfigMap updates would never reach it", vm.MountPath)
		}
		for _, v := range pod.Volumes {
			if v.Name != vm.Name || v.ConfigMap == nil {
				continue
			}
			if v.ConfigMap.Name != m.configMap.Name {
				t.Errorf("volume %s mounts ConfigMap %s, want %s", v.Name, v.ConfigMap.Name, m.configMap.Name)
			}
			key = rel
			for _, it := range v.ConfigMap.Items {
				if it.Path == rel {
					key = it.Key
				}
			}
		}
	}
	if key == "" {
		t.Fatalf("no ConfigMap volume is mounted at %s", reg.Value)
	}
	data, ok := m.configMap.Data[key]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %s", m.configMap.Name, key)
	}
	r, err := registry.Parse("configmap.yaml:"+key, []byte(data), func(string) string { return "" })
	if err != nil {
		t.Fatalf("the example registry is invalid:\n%v", err)
	}
	if len(r.Tools()) == 0 {
		t.Error("the example registry has no tools")
	}

	// Secrets come from the Secret, by keys the example defines.
	secretKeys := map[string]bool{}
	for k := range m.secret.StringData {
		secretKeys[k] = true
	}
	for k := range m.secret.Data {
		secretKeys[k] = true
	}
	fromSecret := func(name string) {
		t.Helper()
		e, ok := env(c, name)
		if !ok || e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("env %s must come from a secretKeyRef", name)
			return
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref.Name != m.secret.Name || !secretKeys[ref.Key] {
			t.Errorf("env %s: secret %s key %s, but the example Secret is %s with keys %v", name, ref.Name, ref.Key, m.secret.Name, secretKeys)
		}
	}
	fromSecret("TOOLROUTER_STORE")
	fromSecret("TOOLROUTER_API_KEYS")
	// Every provider key the registry names.
	for _, p := range r.Providers() {
		if p.APIKeyEnv != "" {
			fromSecret(p.APIKeyEnv)
		}
	}
	fromSecret("OPENAI_API_KEY")
	fromSecret("ANTHROPIC_API_KEY")
	for _, e := range c.Env {
		if strings.Contains(e.Name, "KEY") && e.Value != "" {
			t.Errorf("env %s holds a literal value: keys come from the Secret", e.Name)
		}
	}

	// The example store URL is PostgreSQL (the replicas must share it) and parses.
	store := m.secret.StringData["store-url"]
	if !strings.HasPrefix(store, "postgres://") {
		t.Errorf("example store-url %q: several replicas need postgres://", store)
	} else if _, err := pgx.ParseConfig(store); err != nil {
		t.Errorf("example store-url: %v", err)
	}
}

func TestServiceHPAAndPDB(t *testing.T) {
	m := load(t)
	podLabels := labels.Set(m.deploy.Spec.Template.Labels)
	c := container(t, m)

	// Service → the pods' http port.
	s := m.service
	if len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) {
		t.Errorf("service selector %v does not match the pod labels %v", s.Spec.Selector, podLabels)
	}
	for _, p := range s.Spec.Ports {
		if tp := p.TargetPort.String(); tp != c.Ports[0].Name && tp != fmt.Sprint(c.Ports[0].ContainerPort) {
			t.Errorf("service port %s targets %s, not the container's port", p.Name, tp)
		}
	}

	// No sticky routing: /mcp sessions work on every replica.
	if s.Spec.SessionAffinity != corev1.ServiceAffinityNone {
		t.Errorf("service sessionAffinity %q, want None (no sticky routing needed)", s.Spec.SessionAffinity)
	}

	// HPA → this Deployment, on CPU, never below its replicas.
	h := m.hpa.Spec
	ref := h.ScaleTargetRef
	if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != m.deploy.Name {
		t.Errorf("HPA targets %s %s %s, want apps/v1 Deployment %s", ref.APIVersion, ref.Kind, ref.Name, m.deploy.Name)
	}
	if h.MinReplicas == nil || *h.MinReplicas < *m.deploy.Spec.Replicas || h.MaxReplicas <= *h.MinReplicas {
		t.Errorf("HPA min %v max %d: want min ≥ %d < max", h.MinReplicas, h.MaxReplicas, *m.deploy.Spec.Replicas)
	}
	cpu := false
	for _, mt := range h.Metrics {
		if mt.Type == autoscalingv2.ResourceMetricSourceType && mt.Resource != nil && mt.Resource.Name == corev1.ResourceCPU &&
			mt.Resource.Target.Type == autoscalingv2.UtilizationMetricType && mt.Resource.Target.AverageUtilization != nil {
			cpu = true
		}
	}
	if !cpu {
		t.Error("HPA: want a CPU utilization metric")
	}

	// PDB → the same pods; keeps at least two up (or lets one go).
	p := m.pdb.Spec
	sel, err := metav1.LabelSelectorAsSelector(p.Selector)
	if err != nil || sel.Empty() || !sel.Matches(podLabels) {
		t.Errorf("PDB selector %v does not match the pod labels %v", p.Selector, podLabels)
	}
	switch {
	case p.MinAvailable != nil && p.MaxUnavailable != nil:
		t.Error("PDB: minAvailable and maxUnavailable are exclusive")
	case p.MinAvailable != nil:
		if p.MinAvailable.IntValue() < 2 || int32(p.MinAvailable.IntValue()) >= *m.deploy.Spec.Replicas {
			t.Errorf("PDB minAvailable %s: want 2 ≤ n < replicas", p.MinAvailable)
		}
	case p.MaxUnavailable != nil:
		if p.MaxUnavailable.String() != "1" {
			t.Errorf("PDB maxUnavailable %s, want 1", p.MaxUnavailable)
		}
	default:
		t.Error("PDB: set minAvailable or maxUnavailable")
	}
}

// kustomization is the part of kustomize's Kustomization this directory
// uses; unknown fields are rejected.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors,omitempty"`
	} `json:"labels,omitempty"`
	Resources []string `json:"resources"`
	Images    []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images,omitempty"`
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	m := load(t)
	var k kustomization
	data, err := os.ReadFile(filepath.Join(k8sDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&k); err != nil {
		t.Fatal(err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("kustomization: %s %s", k.APIVersion, k.Kind)
	}
	files, _ := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	var want []string
	for _, f := range files {
		switch b := filepath.Base(f); b {
		case "kustomization.yaml", "secret.example.yaml": // the example secret is never applied
		default:
			want = append(want, b)
		}
	}
	got := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("resources %v, want %v", got, want)
	}
	for _, l := range k.Labels {
		if l.IncludeSelectors {
			t.Error("labels.includeSelectors would change the Deployment's immutable selector")
		}
	}
	for _, img := range k.Images {
		if img.Name == strings.Split(container(t, m).Image, ":")[0] {
			return
		}
	}
	t.Errorf("kustomization images do not set the container image %s", container(t, m).Image)
}

// compose is the part of the Compose file this test reads.
type compose struct {
	Services map[string]struct {
		Image string `yaml:"image"`
		Build *struct {
			Context    string `yaml:"context"`
			Dockerfile string `yaml:"dockerfile"`
		} `yaml:"build"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
		Ports       []string          `yaml:"ports"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

func TestCompose(t *testing.T) {
	data, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml3.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	pg, ok := c.Services["postgres"]
	if !ok || !strings.HasPrefix(pg.Image, "postgres:") || pg.Healthcheck == nil {
		t.Fatal("want a postgres service with a healthcheck")
	}
	tools, ok := c.Services["exampletools"]
	if !ok || !strings.HasPrefix(tools.Image, "golang:") || tools.Healthcheck == nil {
		t.Fatal("want an exampletools service (golang image) with a healthcheck")
	}
	if i := slices.Index(tools.Command, "./cmd/exampletools"); i < 0 || !isDir(filepath.Join("..", "cmd", "exampletools")) {
		t.Errorf("exampletools command %v does not run ./cmd/exampletools", tools.Command)
	}
	toolsAddr := tools.Command[slices.Index(tools.Command, "-addr")+1]
	_, toolsPort, _ := net.SplitHostPort(toolsAddr)

	keys := configKeys(t)
	var replicas []string
	hostPorts := map[string]string{}
	for name, s := range c.Services {
		if !strings.HasPrefix(name, "toolrouterd") {
			continue
		}
		replicas = append(replicas, name)
		if s.Build == nil || s.Build.Context != ".." || s.Build.Dockerfile != "Dockerfile" || !isFile(filepath.Join("..", "Dockerfile")) {
			t.Errorf("%s: want build from ../Dockerfile", name)
		}
		for k := range s.Environment {
			if strings.HasPrefix(k, "TOOLROUTER_") && !keys[k] {
				t.Errorf("%s: env %s: toolrouterd has no such setting", name, k)
			}
		}
		store := s.Environment["TOOLROUTER_STORE"]
		u, err := url.Parse(store)
		if err != nil || u.Scheme != "postgres" || u.Hostname() != "postgres" {
			t.Errorf("%s: TOOLROUTER_STORE %q, want postgres://…@postgres:…", name, store)
		} else {
			pw, _ := u.User.Password()
			if u.User.Username() != pg.Environment["POSTGRES_USER"] || pw != pg.Environment["POSTGRES_PASSWORD"] ||
				strings.TrimPrefix(u.Path, "/") != pg.Environment["POSTGRES_DB"] {
				t.Errorf("%s: TOOLROUTER_STORE does not match the postgres service's user, password and database", name)
			}
			if _, err := pgx.ParseConfig(store); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		if s.DependsOn["postgres"].Condition != "service_healthy" {
			t.Errorf("%s: want depends_on postgres: service_healthy", name)
		}
		// The registry file is mounted where TOOLROUTER_REGISTRY points, and valid.
		regPath := s.Environment["TOOLROUTER_REGISTRY"]
		mounted := false
		for _, v := range s.Volumes {
			parts := strings.Split(v, ":")
			if len(parts) >= 2 && parts[1] == regPath {
				mounted = true
				checkComposeRegistry(t, parts[0], toolsPort)
			}
		}
		if !mounted {
			t.Errorf("%s: nothing mounted at TOOLROUTER_REGISTRY %q", name, regPath)
		}
		for _, p := range s.Ports {
			if other, dup := hostPorts[p]; dup {
				t.Errorf("%s and %s publish the same port %s", name, other, p)
			}
			hostPorts[p] = name
		}
	}
	if len(replicas) < 2 {
		t.Errorf("want two toolrouterd replicas, got %v", replicas)
	}
}

func checkComposeRegistry(t *testing.T, path, toolsPort string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := registry.Parse(path, data, func(string) string { return "" })
	if err != nil {
		t.Fatalf("%s:\n%v", path, err)
	}
	if len(r.Tools()) == 0 {
		t.Fatalf("%s: no tools", path)
	}
	for _, tool := range r.Tools() {
		u, err := url.Parse(tool.Endpoint)
		if err != nil || u.Hostname() != "exampletools" || u.Port() != toolsPort {
			t.Errorf("%s: tool %s endpoint %s is not the exampletools service (port %s)", path, tool.Name, tool.Endpoint, toolsPort)
		}
	}
}

func isDir(p string) bool  { fi, err := os.Stat(p); return err == nil && fi.IsDir() }
func isFile(p string) bool { fi, err := os.Stat(p); return err == nil && fi.Mode().IsRegular() }
