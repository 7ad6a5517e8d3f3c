package deployments_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/toolrouterd/toolrouterd/internal/config"
	"github.com/toolrouterd/toolrouterd/internal/config/configtest"
	"github.com/toolrouterd/toolrouterd/internal/registry"
)

const (
	chartDir = "helm/toolrouterd"
	// helmVersion is the Helm ../tools/helm's go.mod requires.
	helmVersion = "v3.22.0"
	// renderNamespace is the namespace render installs into.
	renderNamespace = "tools"
)

// helmEnv is this process's environment without the settings a chart
// check put in it (checkChart's config.Load, GOMEMLIMIT as "from
// GOMEMLIMIT"): Helm and the go command are Go programs, and those are
// not theirs.
func helmEnv() []string {
	var environ []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOMEMLIMIT=") && !strings.HasPrefix(kv, "TOOLROUTER_") {
			environ = append(environ, kv)
		}
	}
	return environ
}

// helmBin is the path of the pinned Helm: ../tools/helm, Helm's library
// packages at the version its go.mod requires behind the CLI's lint,
// template and version (see its package comment). `go tool -n` builds it
// into the Go build cache the first time on a machine (about 105 s of CPU
// with an empty cache, while the other packages' tests run) and finds it
// there later; once per test process.
var helmBin = sync.OnceValues(func() (string, error) {
	cmd := exec.Command("go", "tool", "-n", "helm")
	cmd.Dir = filepath.Join("..", "tools", "helm")
	// That module's go.mod, not a workspace's.
	cmd.Env = append(helmEnv(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building ../tools/helm (go tool -n helm): %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
})

// helm runs the pinned Helm (helmBin) with its configuration and cache in
// a temporary directory. Its error holds helm's stderr. With -short (make
// test-unit, which starts no binary) it skips the test.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs Helm: not in -short (make test-unit); make test runs it")
	}
	bin, err := helmBin()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(helmEnv(), "HOME="+home, "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.String(), nil
}

// chart is what `helm template` rendered, each object decoded strictly
// into its Kubernetes API type (unknown fields rejected, as decodeStrict
// does for deployments/kubernetes).
type chart struct {
	deploy         *appsv1.Deployment
	service        *corev1.Service
	configMap      *corev1.ConfigMap
	hpa            *autoscalingv2.HorizontalPodAutoscaler
	pdb            *policyv1.PodDisruptionBudget
	serviceAccount *corev1.ServiceAccount
	serviceMonitor *serviceMonitor
	networkPolicy  *networkingv1.NetworkPolicy
	objects        map[string]any // "Kind/name" → the typed object
}

// serviceMonitor is the part of the Prometheus Operator's
// monitoring.coreos.com/v1 ServiceMonitor the chart writes, with the CRD's
// field names; unknown fields are rejected.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval,omitempty"`
			ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// promDuration is the ServiceMonitor CRD's pattern for interval and scrapeTimeout.
var promDuration = regexp.MustCompile(`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`)

// render runs helm template (release toolrouterd) with args and decodes
// its output.
func render(t *testing.T, args ...string) *chart {
	t.Helper()
	out, err := helm(t, append([]string{"template", "toolrouterd", chartDir, "--namespace", renderNamespace}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	c := &chart{objects: map[string]any{}}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(out, -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(doc, "")) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(mustJSON(t, doc), &tm); err != nil {
			t.Fatal(err)
		}
		var into any
		switch tm.APIVersion + " " + tm.Kind {
		case "apps/v1 Deployment":
			c.deploy = new(appsv1.Deployment)
			into = c.deploy
		case "v1 Service":
			c.service = new(corev1.Service)
			into = c.service
		case "v1 ConfigMap":
			c.configMap = new(corev1.ConfigMap)
			into = c.configMap
		case "autoscaling/v2 HorizontalPodAutoscaler":
			c.hpa = new(autoscalingv2.HorizontalPodAutoscaler)
			into = c.hpa
		case "policy/v1 PodDisruptionBudget":
			c.pdb = new(policyv1.PodDisruptionBudget)
			into = c.pdb
		case "v1 ServiceAccount":
			c.serviceAccount = new(corev1.ServiceAccount)
			into = c.serviceAccount
		case "networking.k8s.io/v1 NetworkPolicy":
			c.networkPolicy = new(networkingv1.NetworkPolicy)
			into = c.networkPolicy
		case "monitoring.coreos.com/v1 ServiceMonitor":
			c.serviceMonitor = new(serviceMonitor)
			into = c.serviceMonitor
		default:
			t.Fatalf("helm template rendered an unexpected %s %s:\n%s", tm.APIVersion, tm.Kind, doc)
		}
		if _, err := decodeStrictData([]byte(doc), into); err != nil {
			t.Fatalf("%s: %v\n%s", tm.Kind, err, doc)
		}
		var meta struct{ Metadata metav1.ObjectMeta }
		_ = json.Unmarshal(mustJSON(t, doc), &meta)
		key := tm.Kind + "/" + meta.Metadata.Name
		if _, dup := c.objects[key]; dup {
			t.Fatalf("%s rendered twice", key)
		}
		c.objects[key] = into
	}
	if c.deploy == nil || c.service == nil {
		t.Fatalf("no Deployment or Service rendered:\n%s", out)
	}
	return c
}

func mustJSON(t *testing.T, doc string) []byte {
	t.Helper()
	var v any
	if _, err := decodeStrictData([]byte(doc), &v); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	js, _ := json.Marshal(v)
	return js
}

func TestHelmLint(t *testing.T) {
	if v, err := helm(t, "version", "--template", "{{.Version}}"); err != nil || v != helmVersion {
		t.Fatalf("helm version %q (%v), want %s: ../tools/helm/go.mod requires another", v, err, helmVersion)
	}
	for _, args := range [][]string{nil, {"-f", filepath.Join(chartDir, "ci", "full-values.yaml")}} {
		if out, err := helm(t, append([]string{"lint", "--strict", chartDir}, args...)...); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

// TestHelmTemplate renders the chart with its defaults and with
// ci/full-values.yaml (every value set), and checks what the manifests'
// tests check of deployments/kubernetes.
func TestHelmTemplate(t *testing.T) {
	settings := configKeys(t)
	settings["TOOLROUTER_TRACE_CONTENT"], settings["TOOLROUTER_TRACE_STORE"] = true, true // read by internal/telemetry

	t.Run("default", func(t *testing.T) {
		c := render(t)
		checkChart(t, c, settings)
		if c.configMap != nil || c.serviceMonitor != nil || c.serviceAccount != nil || c.networkPolicy != nil {
			t.Error("by default no registry ConfigMap, ServiceMonitor, ServiceAccount or NetworkPolicy")
		}
		if c.hpa == nil || c.pdb == nil {
			t.Error("by default an HPA and a PDB")
		}
		if c.deploy.Spec.Replicas != nil {
			t.Error("with the HPA on, the Deployment must not set replicas (an upgrade would reset the HPA's count)")
		}
	})
	t.Run("full", func(t *testing.T) {
		c := render(t, "-f", filepath.Join(chartDir, "ci", "full-values.yaml"))
		checkChart(t, c, settings)
		if c.configMap == nil || c.serviceMonitor == nil || c.serviceAccount == nil || c.hpa == nil || c.pdb == nil || c.networkPolicy == nil {
			t.Fatalf("full values: want every object, got %v", slices.Sorted(maps.Keys(c.objects)))
		}
		// Every setting toolrouterd reads is a value.
		ct := container(t, &manifests{deploy: *c.deploy})
		for k := range settings {
			if _, ok := env(ct, k); !ok {
				t.Errorf("full values set no %s: every setting must be a value", k)
			}
		}
		if e, _ := env(ct, "TOOLROUTER_MAX_BATCH_OUTPUT_BYTES"); e.Value != "17179869184" {
			t.Errorf("TOOLROUTER_MAX_BATCH_OUTPUT_BYTES %q: a large integer must render as one", e.Value)
		}
		if c.serviceAccount.Annotations["eks.amazonaws.com/role-arn"] == "" || c.deploy.Spec.Template.Spec.ServiceAccountName != c.serviceAccount.Name {
			t.Error("the pods must run as the created ServiceAccount, with its annotations")
		}
		if c.pdb.Spec.MinAvailable == nil || c.pdb.Spec.MaxUnavailable != nil {
			t.Errorf("PDB %+v: minAvailable set wins over maxUnavailable", c.pdb.Spec)
		}
		for name, want := range map[string]string{"TOOLROUTER_STORE": "pg-app/uri", "TOOLROUTER_API_KEYS": "tr-secrets/client-keys", "LLM_API_KEY": "llm-keys/api-key"} {
			if e, _ := env(ct, name); e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key != want {
				t.Errorf("env %s %+v, want it from the Secret key %s", name, e.ValueFrom, want)
			}
		}
	})
	t.Run("network policy", func(t *testing.T) {
		// On with its defaults: ingress to the HTTP port from anywhere,
		// egress unrestricted.
		c := render(t, "--set", "networkPolicy.enabled=true")
		checkChart(t, c, settings)
		np := c.networkPolicy
		if np == nil {
			t.Fatalf("networkPolicy.enabled=true rendered no NetworkPolicy: %v", slices.Sorted(maps.Keys(c.objects)))
		}
		checkNetworkPolicy(t, c)
		if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Ingress) != 1 ||
			len(np.Spec.Ingress[0].From) != 0 || np.Spec.Egress != nil {
			t.Errorf("default policy %+v: want Ingress only, from any source, egress unrestricted", np.Spec)
		}
		// Full values: ingress from the listed peers, egress DNS and the listed rules.
		c = render(t, "-f", filepath.Join(chartDir, "ci", "full-values.yaml"))
		np = c.networkPolicy
		checkNetworkPolicy(t, c)
		if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) ||
			len(np.Spec.Ingress[0].From) != 2 || np.Spec.Ingress[0].From[0].NamespaceSelector == nil {
			t.Errorf("full policy %+v: want Ingress and Egress, from the two peers", np.Spec)
		}
		if len(np.Spec.Egress) != 3 || len(np.Spec.Egress[0].Ports) != 2 || np.Spec.Egress[0].Ports[0].Port.IntValue() != 53 ||
			np.Spec.Egress[2].To[0].IPBlock == nil || np.Spec.Egress[2].To[0].IPBlock.Except[0] != "169.254.169.254/32" {
			t.Errorf("full policy egress %+v: want DNS then the two rules of egress.to", np.Spec.Egress)
		}
		// The schema refuses what would not be a policy.
		for _, set := range []string{"networkPolicy.ingressFrom[0].pods=x", "networkPolicy.egress.to[0].cidr=10.0.0.0/8", "networkPolicy.enable=true"} {
			if out, err := helm(t, "template", "toolrouterd", chartDir, "--set", "networkPolicy.enabled=true,"+set); err == nil || !strings.Contains(err.Error(), "schema") {
				t.Errorf("--set %s: %v, want a schema error\n%s", set, err, out)
			}
		}
	})
	t.Run("without HPA and PDB", func(t *testing.T) {
		c := render(t, "--set", "autoscaling.enabled=false,podDisruptionBudget.enabled=false,replicaCount=2")
		checkChart(t, c, settings)
		if c.hpa != nil || c.pdb != nil || c.deploy.Spec.Replicas == nil || *c.deploy.Spec.Replicas != 2 {
			t.Errorf("want no HPA, no PDB and 2 replicas, got %v replicas %v", slices.Sorted(maps.Keys(c.objects)), c.deploy.Spec.Replicas)
		}
	})
	t.Run("existing ConfigMap, no API keys", func(t *testing.T) {
		c := render(t, "--set", "registry.existingConfigMap=tools-registry,registry.key=r.yaml,secrets.apiKeysKey=")
		checkChart(t, c, settings)
		ct := container(t, &manifests{deploy: *c.deploy})
		if _, ok := env(ct, "TOOLROUTER_API_KEYS"); ok || c.configMap != nil {
			t.Error("want no TOOLROUTER_API_KEYS and no ConfigMap of the chart's")
		}
		for _, v := range c.deploy.Spec.Template.Spec.Volumes {
			if v.Name == "registry" && (v.ConfigMap == nil || v.ConfigMap.Name != "tools-registry" || v.ConfigMap.Items[0].Key != "r.yaml") {
				t.Errorf("registry volume %+v, want the ConfigMap tools-registry's key r.yaml", v.ConfigMap)
			}
		}
	})
}

// checkNetworkPolicy: the policy selects exactly the Deployment's pods and
// lets traffic in on the container's HTTP port only.
func checkNetworkPolicy(t *testing.T, c *chart) {
	t.Helper()
	np := c.networkPolicy
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(c.deploy.Spec.Template.Labels)) {
		t.Errorf("podSelector %v (%v) does not select the Deployment's pods %v", np.Spec.PodSelector, err, c.deploy.Spec.Template.Labels)
	}
	if !reflect.DeepEqual(np.Spec.PodSelector.MatchLabels, c.deploy.Spec.Selector.MatchLabels) {
		t.Errorf("podSelector %v, want the Deployment's selector %v", np.Spec.PodSelector.MatchLabels, c.deploy.Spec.Selector.MatchLabels)
	}
	ct := container(t, &manifests{deploy: *c.deploy})
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 {
		t.Fatalf("ingress %+v: want one rule, one port", np.Spec.Ingress)
	}
	p := np.Spec.Ingress[0].Ports[0]
	if p.Port == nil || p.Port.String() != ct.Ports[0].Name || ct.Ports[0].Name != "http" || p.Protocol == nil || *p.Protocol != corev1.ProtocolTCP {
		t.Errorf("ingress port %+v, want the container's port %q/TCP", p, ct.Ports[0].Name)
	}
}

// TestHelmConfigValuesAreSettings: config.* in values.schema.json,
// values.yaml and ci/full-values.yaml are the same keys, one per setting
// besides the six the chart sets itself (TOOLROUTER_ADDR, _REGISTRY, _STORE,
// _API_KEYS, _STATE_KEY, _TOKEN_KEYS: the last four from Secrets); with TestHelmTemplate/full (every setting rendered) a value
// cannot exist without its variable, nor a variable without its value.
func TestHelmConfigValuesAreSettings(t *testing.T) {
	configOf := func(file string) []string {
		data, err := os.ReadFile(filepath.Join(chartDir, file))
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Config     map[string]any `json:"config"`
			Properties struct {
				Config struct {
					Properties map[string]any `json:"properties"`
				} `json:"config"`
			} `json:"properties"`
		}
		if err := yaml.Unmarshal(data, &v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if v.Config == nil { // the schema
			v.Config = v.Properties.Config.Properties
		}
		return slices.Sorted(maps.Keys(v.Config))
	}
	schema := configOf("values.schema.json")
	for _, f := range []string{"values.yaml", filepath.Join("ci", "full-values.yaml")} {
		if got := configOf(f); !slices.Equal(got, schema) {
			t.Errorf("%s config keys %v, values.schema.json has %v", f, got, schema)
		}
	}
	settings := configKeys(t)
	if want := len(settings) + 2 - 6; len(schema) != want { // + TOOLROUTER_TRACE_CONTENT, _STORE
		t.Errorf("values.schema.json has %d config values, want %d (one per setting)", len(schema), want)
	}
}

// checkChart checks one rendering: the objects fit together and the
// container's variables are settings toolrouterd has, with values it accepts.
func checkChart(t *testing.T, c *chart, settings map[string]bool) {
	t.Helper()
	pod := c.deploy.Spec.Template.Spec
	ct := container(t, &manifests{deploy: *c.deploy})
	podLabels := labels.Set(c.deploy.Spec.Template.Labels)

	// Names, labels and variable names the API server accepts.
	for key, obj := range c.objects {
		o := obj.(metav1.Object)
		if !strings.HasPrefix(o.GetName(), c.deploy.Name) {
			t.Errorf("%s: not named after the release (%s)", key, c.deploy.Name)
		}
		for _, msg := range validation.IsDNS1035Label(o.GetName()) { // a Service's rule, the strictest
			t.Errorf("%s: name: %s", key, msg)
		}
		for k, v := range o.GetLabels() {
			for _, msg := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...) {
				t.Errorf("%s: label %s=%s: %s", key, k, v, msg)
			}
		}
	}
	for _, e := range ct.Env {
		for _, msg := range validation.IsEnvVarName(e.Name) {
			t.Errorf("env %s: %s", e.Name, msg)
		}
	}
	if sel, err := metav1.LabelSelectorAsSelector(c.deploy.Spec.Selector); err != nil || sel.Empty() || !sel.Matches(podLabels) {
		t.Errorf("deployment selector %v does not match the pod labels %v", c.deploy.Spec.Selector, podLabels)
	}
	if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
		t.Error("enableServiceLinks must be false: envconfig would read the injected {SERVICE}_PORT variables")
	}

	// Variables: known settings, none twice, none set but empty, and the
	// literal ones (the secret ones replaced) pass toolrouterd's own checks.
	lookup := map[string]string{}
	for _, e := range ct.Env {
		if _, dup := lookup[e.Name]; dup {
			t.Errorf("env %s twice", e.Name)
		}
		if strings.HasPrefix(e.Name, "TOOLROUTER_") && !settings[e.Name] {
			t.Errorf("env %s: toolrouterd has no such setting", e.Name)
		}
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			lookup[e.Name] = map[string]string{"TOOLROUTER_STORE": "postgres://u:p@db:5432/d", "TOOLROUTER_API_KEYS": "k1,k2"}[e.Name]
		case e.ValueFrom != nil:
			lookup[e.Name] = "from " + e.Name
		case e.Value == "":
			t.Errorf("env %s is set but empty: toolrouterd would take it as set", e.Name)
		default:
			lookup[e.Name] = e.Value
		}
	}
	pairs := make([]string, 0, 2*len(lookup))
	for k, v := range lookup {
		pairs = append(pairs, k, v)
	}
	configtest.Setenv(t, pairs...)
	if _, err := config.Load(); err != nil {
		t.Errorf("toolrouterd refuses the rendered settings: %v", err)
	}
	if e, ok := env(ct, "TOOLROUTER_STORE"); !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
		t.Error("TOOLROUTER_STORE must come from a Secret")
	}
	if e, ok := env(ct, "TOOLROUTER_API_KEYS"); ok && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
		t.Error("TOOLROUTER_API_KEYS must come from a Secret")
	}

	// The port, the probes on it, the Service onto it.
	if len(ct.Ports) != 1 || ct.Ports[0].Name != "http" {
		t.Fatalf("ports %+v, want one named http", ct.Ports)
	}
	if e, _ := env(ct, "TOOLROUTER_ADDR"); e.Value != fmt.Sprintf(":%d", ct.Ports[0].ContainerPort) {
		t.Errorf("TOOLROUTER_ADDR %q, want :%d (the container port)", e.Value, ct.Ports[0].ContainerPort)
	}
	for name, p := range map[string]struct {
		probe *corev1.Probe
		path  string
	}{"startup": {ct.StartupProbe, "/healthz"}, "readiness": {ct.ReadinessProbe, "/readyz"}, "liveness": {ct.LivenessProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe %+v, want an httpGet of %s on http", name, p.probe, p.path)
		}
	}
	if !labels.SelectorFromSet(c.service.Spec.Selector).Matches(podLabels) || len(c.service.Spec.Selector) == 0 {
		t.Errorf("service selector %v does not match the pod labels %v", c.service.Spec.Selector, podLabels)
	}
	for _, p := range c.service.Spec.Ports {
		if p.TargetPort.String() != "http" {
			t.Errorf("service port %s targets %s, not http", p.Name, p.TargetPort.String())
		}
	}

	// GOMEMLIMIT follows the memory limit; graceful shutdown fits the grace period.
	if e, ok := env(ct, "GOMEMLIMIT"); !ok || e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef == nil ||
		e.ValueFrom.ResourceFieldRef.Resource != "limits.memory" || !e.ValueFrom.ResourceFieldRef.Divisor.IsZero() {
		t.Errorf("GOMEMLIMIT %+v, want it from resourceFieldRef limits.memory in bytes", e)
	}
	if ct.Resources.Limits.Memory().IsZero() {
		t.Error("no memory limit: GOMEMLIMIT would have nothing to follow")
	}
	shutdown := 30 * time.Second
	if e, ok := env(ct, "TOOLROUTER_SHUTDOWN_TIMEOUT"); ok {
		shutdown, _ = time.ParseDuration(e.Value)
	}
	var preStop time.Duration
	if ct.Lifecycle != nil && ct.Lifecycle.PreStop != nil && ct.Lifecycle.PreStop.Sleep != nil {
		preStop = time.Duration(ct.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= shutdown+preStop {
		t.Errorf("terminationGracePeriodSeconds %v must exceed the preStop pause %v + TOOLROUTER_SHUTDOWN_TIMEOUT %v", g, preStop, shutdown)
	}

	// The registry: a ConfigMap volume mounted where TOOLROUTER_REGISTRY
	// points; the chart's own ConfigMap holds a valid registry whose
	// provider keys each come from a Secret.
	if reg, ok := env(ct, "TOOLROUTER_REGISTRY"); ok {
		var volume *corev1.Volume
		for _, vm := range ct.VolumeMounts {
			if rel, err := filepath.Rel(vm.MountPath, reg.Value); err == nil && !strings.HasPrefix(rel, "..") && vm.SubPath == "" {
				for i := range pod.Volumes {
					if pod.Volumes[i].Name == vm.Name && pod.Volumes[i].ConfigMap != nil {
						volume = &pod.Volumes[i]
					}
				}
			}
		}
		if volume == nil {
			t.Fatalf("no ConfigMap volume is mounted at %s (without subPath)", reg.Value)
		}
		if c.configMap != nil {
			if volume.ConfigMap.Name != c.configMap.Name || len(volume.ConfigMap.Items) != 1 ||
				volume.ConfigMap.Items[0].Path != filepath.Base(reg.Value) {
				t.Fatalf("registry volume %+v does not map the ConfigMap %s to %s", volume.ConfigMap, c.configMap.Name, reg.Value)
			}
			key := volume.ConfigMap.Items[0].Key
			r, err := registry.Parse("registry", []byte(c.configMap.Data[key]), func(string) string { return "" })
			if err != nil {
				t.Fatalf("the rendered registry (ConfigMap key %s) is invalid:\n%v", key, err)
			}
			for _, p := range r.Providers() {
				if e, ok := env(ct, p.APIKeyEnv); p.APIKeyEnv != "" && (!ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
					t.Errorf("provider %s: its key %s does not come from a Secret", p.Name, p.APIKeyEnv)
				}
			}
			if c.deploy.Spec.Template.Annotations["checksum/registry"] == "" {
				t.Error("no checksum/registry annotation: a registry change would not restart the pods")
			}
		}
	} else if c.configMap != nil {
		t.Error("a registry ConfigMap but no TOOLROUTER_REGISTRY")
	}

	if c.hpa != nil {
		ref := c.hpa.Spec.ScaleTargetRef
		if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != c.deploy.Name {
			t.Errorf("HPA targets %s %s %s, want apps/v1 Deployment %s", ref.APIVersion, ref.Kind, ref.Name, c.deploy.Name)
		}
		if c.hpa.Spec.MinReplicas == nil || c.hpa.Spec.MaxReplicas < *c.hpa.Spec.MinReplicas {
			t.Errorf("HPA min %v max %d", c.hpa.Spec.MinReplicas, c.hpa.Spec.MaxReplicas)
		}
	}
	if c.pdb != nil {
		sel, err := metav1.LabelSelectorAsSelector(c.pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(podLabels) {
			t.Errorf("PDB selector %v does not match the pod labels %v", c.pdb.Spec.Selector, podLabels)
		}
	}
	if sm := c.serviceMonitor; sm != nil {
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(c.service.Labels)) {
			t.Errorf("ServiceMonitor selector %v does not match the Service's labels %v", sm.Spec.Selector, c.service.Labels)
		}
		if !slices.Equal(sm.Spec.NamespaceSelector.MatchNames, []string{renderNamespace}) {
			t.Errorf("ServiceMonitor namespaces %v, want the release's %s", sm.Spec.NamespaceSelector.MatchNames, renderNamespace)
		}
		if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != c.service.Spec.Ports[0].Name || sm.Spec.Endpoints[0].Path != "/metrics" {
			t.Errorf("ServiceMonitor endpoints %+v, want /metrics on the Service's port %s", sm.Spec.Endpoints, c.service.Spec.Ports[0].Name)
		}
		for _, ep := range sm.Spec.Endpoints {
			if !promDuration.MatchString(ep.Interval) || !promDuration.MatchString(ep.ScrapeTimeout) {
				t.Errorf("ServiceMonitor interval %q or scrapeTimeout %q is not a Prometheus duration", ep.Interval, ep.ScrapeTimeout)
			}
		}
	}
}

// TestHelmValuesSchema: values.schema.json refuses wrong values, naming them,
// before anything is rendered.
func TestHelmValuesSchema(t *testing.T) {
	for _, tc := range []struct{ set, says string }{
		{"config.logLevel=verbose", "logLevel"},
		{"config.logLevl=debug", "logLevl"},
		{"config.writeTimeout=30", "writeTimeout"},
		{"config.maxActiveRuns=0", "maxActiveRuns"},
		{"config.maxBodyBytes=abc", "maxBodyBytes"},
		{"secrets.storeKey=", "storeKey"},
		{"resources.limits.memory=null", "memory"},
		{"readinessProbe.httpGet.path=/", "httpGet"},
		{"containerPort=70000", "containerPort"},
		{"metrics.serviceMonitor.interval=30 seconds", "interval"},
		{"replicas=3", "replicas"},
	} {
		out, err := helm(t, "template", "toolrouterd", chartDir, "--set", tc.set)
		if err == nil {
			t.Errorf("--set %s: rendered, want the schema to refuse it:\n%s", tc.set, out)
			continue
		}
		if !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("--set %s: %v\nwant a schema error naming %s", tc.set, err, tc.says)
		}
	}
}

// TestHelmMatchesKubernetesManifests: the chart with its default values
// (which are deployments/kubernetes's settings) and the plain manifests'
// registry renders the objects kubectl apply -k deployments/kubernetes
// creates, field for field. The chart may add only Helm's labels (release
// instance, chart, version, managed-by; part-of on the pods) and the
// registry checksum annotation, and leaves replicas to the HPA.
func TestHelmMatchesKubernetesManifests(t *testing.T) {
	m := load(t)
	regFile := filepath.Join(t.TempDir(), "registry.yaml")
	if err := os.WriteFile(regFile, []byte(m.configMap.Data["registry.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	c := render(t, "--set-file", "registry.content="+regFile)

	// What kubectl apply -k does to the files: kustomization.yaml's labels
	// on every object's metadata, its image.
	var k kustomization
	data, err := os.ReadFile(filepath.Join(k8sDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeStrictData(data, &k); err != nil {
		t.Fatal(err)
	}
	plain := map[string]metav1.Object{"ConfigMap/": &m.configMap, "Deployment/": &m.deploy, "Service/": &m.service,
		"HorizontalPodAutoscaler/": &m.hpa, "PodDisruptionBudget/": &m.pdb}
	want := map[string]any{}
	for kind, obj := range plain {
		l := obj.GetLabels()
		for _, kl := range k.Labels {
			maps.Copy(l, kl.Pairs)
		}
		obj.SetLabels(l)
		want[kind+obj.GetName()] = obj
	}
	cs := m.deploy.Spec.Template.Spec.Containers
	for i := range cs {
		name, tag, _ := strings.Cut(cs[i].Image, ":")
		for _, img := range k.Images {
			if img.Name == name {
				cs[i].Image = img.NewName + ":" + tag
				if img.NewTag != "" {
					cs[i].Image = img.NewName + ":" + img.NewTag
				}
			}
		}
	}
	// Replicas: the chart leaves them to its HPA, which starts where the files' Deployment does.
	if c.hpa == nil || c.hpa.Spec.MinReplicas == nil || m.deploy.Spec.Replicas == nil || *c.hpa.Spec.MinReplicas != *m.deploy.Spec.Replicas {
		t.Errorf("the chart's HPA minReplicas must be the Deployment's replicas %v", m.deploy.Spec.Replicas)
	}
	m.deploy.Spec.Replicas = nil

	if got, wantKeys := slices.Sorted(maps.Keys(c.objects)), slices.Sorted(maps.Keys(want)); !slices.Equal(got, wantKeys) {
		t.Fatalf("the chart renders %v, deployments/kubernetes has %v", got, wantKeys)
	}
	helmOnly := regexp.MustCompile(`\.(labels|matchLabels|selector)\.(app\.kubernetes\.io/(instance|version|managed-by|component)|helm\.sh/chart)$|` +
		`^Deployment/[^.]+\.spec\.template\.metadata\.(labels\.app\.kubernetes\.io/part-of|annotations\.checksum/registry)$`)
	var diff []string
	for _, key := range slices.Sorted(maps.Keys(want)) {
		a, b := flatten(t, key, want[key]), flatten(t, key, c.objects[key])
		paths := maps.Clone(a)
		maps.Copy(paths, b)
		for _, p := range slices.Sorted(maps.Keys(paths)) {
			va, ina := a[p]
			vb, inb := b[p]
			switch {
			case ina && inb && va != vb:
				diff = append(diff, fmt.Sprintf("  %s: deployments/kubernetes %s, chart %s", p, va, vb))
			case ina && !inb:
				diff = append(diff, fmt.Sprintf("- %s: %s (deployments/kubernetes only)", p, va))
			case !ina && inb && !helmOnly.MatchString(p):
				diff = append(diff, fmt.Sprintf("+ %s: %s (chart only)", p, vb))
			}
		}
	}
	if len(diff) > 0 {
		t.Errorf("the chart (default values) and deployments/kubernetes differ; change both, or the chart's values.yaml:\n%s", strings.Join(diff, "\n"))
	}
}

// flatten turns a typed object into path → JSON value lines, lists of
// named items (containers, env, ports, volumes, mounts) indexed by name,
// so that a difference reads as one line and order of named items does
// not matter.
func flatten(t *testing.T, prefix string, obj any) map[string]string {
	t.Helper()
	js, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var walk func(string, any)
	walk = func(p string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(p+"."+k, x)
			}
		case []any:
			for i, x := range v {
				idx := fmt.Sprint(i)
				if m, ok := x.(map[string]any); ok {
					if name, ok := m["name"].(string); ok {
						idx = name
					}
				}
				walk(p+"["+idx+"]", x)
			}
		default:
			b, _ := json.Marshal(v)
			out[p] = string(b)
		}
	}
	walk(prefix, v)
	return out
}
