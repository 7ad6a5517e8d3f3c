{{/* The chart's name, or nameOverride. */}}
{{- define "toolrouterd.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The objects' name: fullnameOverride, else the release name when it
contains the chart's name (release "toolrouterd" → "toolrouterd", as in
deployments/kubernetes), else release-chart. */}}
{{- define "toolrouterd.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "toolrouterd.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* What selects this release's pods: never changes after install (a
Deployment's selector is immutable). */}}
{{- define "toolrouterd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "toolrouterd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Every object's labels: deployments/kubernetes's (name, component,
part-of) and Helm's. */}}
{{- define "toolrouterd.labels" -}}
{{ include "toolrouterd.selectorLabels" . }}
app.kubernetes.io/component: server
app.kubernetes.io/part-of: toolrouterd
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Secret secrets.* keys are read from. */}}
{{- define "toolrouterd.secretName" -}}
{{- .Values.secrets.name | default (include "toolrouterd.fullname" .) }}
{{- end }}

{{/* The ConfigMap holding the registry: registry.existingConfigMap, else
the chart's own. */}}
{{- define "toolrouterd.registryConfigMap" -}}
{{- .Values.registry.existingConfigMap | default (printf "%s-registry" (include "toolrouterd.fullname" .)) }}
{{- end }}

{{/* Whether a registry is mounted. */}}
{{- define "toolrouterd.hasRegistry" -}}
{{- if or .Values.registry.existingConfigMap .Values.registry.content }}true{{ end }}
{{- end }}

{{/* The config.* values in docs/configuration.md's order, each with its variable. */}}
{{- define "toolrouterd.configVars" -}}
logLevel: TOOLROUTER_LOG_LEVEL
logFormat: TOOLROUTER_LOG_FORMAT
jwtIssuer: TOOLROUTER_JWT_ISSUER
jwtJwksURL: TOOLROUTER_JWT_JWKS_URL
jwtAudience: TOOLROUTER_JWT_AUDIENCE
jwtSubjectClaim: TOOLROUTER_JWT_SUBJECT_CLAIM
maxBodyBytes: TOOLROUTER_MAX_BODY_BYTES
batchConcurrency: TOOLROUTER_BATCH_CONCURRENCY
maxBatchOutputBytes: TOOLROUTER_MAX_BATCH_OUTPUT_BYTES
writeTimeout: TOOLROUTER_WRITE_TIMEOUT
shutdownTimeout: TOOLROUTER_SHUTDOWN_TIMEOUT
idempotencyTTL: TOOLROUTER_IDEMPOTENCY_TTL
approvalTTL: TOOLROUTER_APPROVAL_TTL
maxPendingApprovals: TOOLROUTER_MAX_PENDING_APPROVALS
approvalRetention: TOOLROUTER_APPROVAL_RETENTION
mcpDiscoveryMaxPages: TOOLROUTER_MCP_DISCOVERY_MAX_PAGES
mcpDiscoveryMaxTools: TOOLROUTER_MCP_DISCOVERY_MAX_TOOLS
mcpDiscoveryMaxBytes: TOOLROUTER_MCP_DISCOVERY_MAX_BYTES
pinMaxPending: TOOLROUTER_PIN_MAX_PENDING
pinMaxPerServer: TOOLROUTER_PIN_MAX_PER_SERVER
codeTimeout: TOOLROUTER_CODE_TIMEOUT
codeCPU: TOOLROUTER_CODE_CPU
codeMaxCalls: TOOLROUTER_CODE_MAX_CALLS
codeMaxHeapBytes: TOOLROUTER_CODE_MAX_HEAP_BYTES
codeMaxOutputBytes: TOOLROUTER_CODE_MAX_OUTPUT_BYTES
codeConcurrency: TOOLROUTER_CODE_CONCURRENCY
circuitFailures: TOOLROUTER_CIRCUIT_FAILURES
circuitCooldown: TOOLROUTER_CIRCUIT_COOLDOWN
auditRetention: TOOLROUTER_AUDIT_RETENTION
runHeartbeat: TOOLROUTER_RUN_HEARTBEAT
taskHeartbeat: TOOLROUTER_TASK_HEARTBEAT
maxActiveRuns: TOOLROUTER_MAX_ACTIVE_RUNS
maxRunBytes: TOOLROUTER_MAX_RUN_BYTES
resultRetention: TOOLROUTER_RESULT_RETENTION
runRetention: TOOLROUTER_RUN_RETENTION
allowedOrigins: TOOLROUTER_ALLOWED_ORIGINS
debugAddr: TOOLROUTER_DEBUG_ADDR
allowUnauthenticated: TOOLROUTER_ALLOW_UNAUTHENTICATED
publicURL: TOOLROUTER_PUBLIC_URL
traceContent: TOOLROUTER_TRACE_CONTENT
traceStore: TOOLROUTER_TRACE_STORE
{{- end }}

{{/* The env entries of config.*: a value that is null or "" is not set at
all (a set-but-empty variable is an error for every setting with a
default). Numbers are printed as integers (YAML numbers reach templates as
float64, which would print as 6.7108864e+07), lists joined with commas. */}}
{{- define "toolrouterd.configEnv" -}}
{{- $config := .Values.config }}
{{- range include "toolrouterd.configVars" . | splitList "\n" }}
{{- $pair := splitList ": " . }}
{{- $v := get $config (first $pair) }}
{{- if kindIs "slice" $v }}{{ $v = join "," $v }}{{ end }}
{{- if kindIs "float64" $v }}{{ $v = int64 $v }}{{ end }}
{{- if and (not (kindIs "invalid" $v)) (ne (toString $v) "") }}
- name: {{ last $pair }}
  value: {{ toString $v | quote }}
{{- end }}
{{- end }}
{{- end }}
