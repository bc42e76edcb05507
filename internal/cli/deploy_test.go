package cli

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// deployDocuments splits a manifest in deploy/ into its YAML documents.
func deployDocuments(t *testing.T, name string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	return splitDocuments(t, name, data)
}

// splitDocuments splits YAML into its documents, leaving out those that
// hold only comments.
func splitDocuments(t *testing.T, name string, data []byte) [][]byte {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.Bytes()
}

// decodeStrict decodes doc into obj, failing on any field obj's type lacks.
func decodeStrict(t *testing.T, name string, doc []byte, obj any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// kindOf returns a document's apiVersion and kind.
func kindOf(t *testing.T, name string, doc []byte) string {
	t.Helper()
	var tm struct{ APIVersion, Kind string }
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tm.APIVersion + " " + tm.Kind
}

// TestDeployManifestsParse checks that every manifest in deploy/ decodes
// strictly into its Kubernetes type and says what docs/DEPLOY.md promises.
func TestDeployManifestsParse(t *testing.T) {
	t.Run("rbac.yaml", func(t *testing.T) {
		docs := deployDocuments(t, "base/rbac.yaml")
		var kinds []string
		for _, doc := range docs {
			kinds = append(kinds, kindOf(t, "rbac.yaml", doc))
		}
		want := []string{"v1 ServiceAccount", "rbac.authorization.k8s.io/v1 ClusterRole", "rbac.authorization.k8s.io/v1 ClusterRoleBinding"}
		if !slices.Equal(kinds, want) {
			t.Fatalf("kinds %q, want %q", kinds, want)
		}
		var sa corev1.ServiceAccount
		var role rbacv1.ClusterRole
		var binding rbacv1.ClusterRoleBinding
		decodeStrict(t, "rbac.yaml", docs[0], &sa)
		decodeStrict(t, "rbac.yaml", docs[1], &role)
		decodeStrict(t, "rbac.yaml", docs[2], &binding)
		if sa.Name != "kubectl-svcproxy" || sa.Namespace != "kube-system" {
			t.Errorf("ServiceAccount %s/%s", sa.Namespace, sa.Name)
		}
		// Least privilege: read-only, and only what the tool reads.
		read := []string{"get", "list", "watch"}
		wantRules := []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes", "services"}, Verbs: read},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"servicecidrs"}, Verbs: read},
		}
		if role.Name != "kubectl-svcproxy" || !reflect.DeepEqual(role.Rules, wantRules) {
			t.Errorf("ClusterRole %s rules %+v, want %+v", role.Name, role.Rules, wantRules)
		}
		wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kubectl-svcproxy", Namespace: "kube-system"}}
		if binding.RoleRef.Name != role.Name || !reflect.DeepEqual(binding.Subjects, wantSubjects) {
			t.Errorf("ClusterRoleBinding roleRef %+v subjects %+v", binding.RoleRef, binding.Subjects)
		}
	})

	t.Run("daemonset.yaml", func(t *testing.T) {
		docs := deployDocuments(t, "base/daemonset.yaml")
		if len(docs) != 1 || kindOf(t, "daemonset.yaml", docs[0]) != "apps/v1 DaemonSet" {
			t.Fatalf("want one apps/v1 DaemonSet, got %d documents", len(docs))
		}
		var ds appsv1.DaemonSet
		decodeStrict(t, "daemonset.yaml", docs[0], &ds)
		if ds.Namespace != "kube-system" || !reflect.DeepEqual(ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels) {
			t.Errorf("DaemonSet %s/%s selector %v labels %v", ds.Namespace, ds.Name, ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels)
		}
		checkPodSpec(t, ds.Spec.Template.Spec, "apply", "--watch", "--lock-wait=")
		if pod := ds.Spec.Template.Spec; len(pod.Tolerations) != 1 || pod.Tolerations[0].Operator != corev1.TolerationOpExists {
			t.Errorf("tolerations %+v, want operator Exists", pod.Tolerations)
		}
		checkWatchContainer(t, ds.Spec.Template.Spec.Containers[0], deployConfig(t).HealthzBindAddress)
	})

	t.Run("cronjob.yaml", func(t *testing.T) {
		docs := deployDocuments(t, "cronjob/cronjob.yaml")
		if len(docs) != 1 || kindOf(t, "cronjob.yaml", docs[0]) != "batch/v1 CronJob" {
			t.Fatalf("want one batch/v1 CronJob, got %d documents", len(docs))
		}
		var cj batchv1.CronJob
		decodeStrict(t, "cronjob.yaml", docs[0], &cj)
		if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
			t.Errorf("concurrencyPolicy %q", cj.Spec.ConcurrencyPolicy)
		}
		pod := cj.Spec.JobTemplate.Spec.Template.Spec
		if pod.NodeName == "" {
			t.Error("the CronJob is not pinned to a node")
		}
		checkPodSpec(t, pod, "apply", "--lock-wait=60s")
		checkCronJobExitCodes(t, cj.Spec.JobTemplate.Spec)
	})

	t.Run("krew/svcproxy.yaml", func(t *testing.T) {
		docs := deployDocuments(t, "krew/svcproxy.yaml")
		if len(docs) != 1 || kindOf(t, "krew", docs[0]) != "krew.googlecontainertools.github.com/v1alpha2 Plugin" {
			t.Fatalf("want one krew Plugin, got %d documents", len(docs))
		}
		var plugin struct {
			Metadata struct{ Name string }
			Spec     struct {
				ShortDescription, Description, Homepage, Caveats string
				Platforms                                        []struct {
					URI, Sha256, Bin string
					Selector         struct{ MatchLabels map[string]string }
					Files            []struct{ From, To string }
				}
			}
		}
		if err := yaml.Unmarshal(docs[0], &plugin); err != nil {
			t.Fatal(err)
		}
		if plugin.Metadata.Name != "svcproxy" || plugin.Spec.ShortDescription == "" || plugin.Spec.Description == "" || plugin.Spec.Homepage == "" || !strings.Contains(plugin.Spec.Caveats, "need") {
			t.Errorf("plugin %+v", plugin)
		}
		var arches []string
		for _, p := range plugin.Spec.Platforms {
			goos, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
			arches = append(arches, goos+"/"+arch)
			bin, ext := "kubectl-svcproxy", ".tar.gz"
			if goos == "windows" {
				bin, ext = "kubectl-svcproxy.exe", ".zip"
			}
			if p.Bin != bin || p.Sha256 == "" || !strings.HasSuffix(p.URI, "_"+goos+"_"+arch+ext) {
				t.Errorf("platform %+v", p)
			}
			// The completion script kubectl runs ships beside the binary,
			// and krew-index wants the license in every archive.
			var files []string
			for _, f := range p.Files {
				files = append(files, f.From)
			}
			for _, want := range []string{bin, "kubectl_complete-svcproxy", "LICENSE"} {
				if !slices.Contains(files, want) {
					t.Errorf("platform %s/%s: files %v, want %s", goos, arch, files, want)
				}
			}
		}
		if !slices.Equal(arches, []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"}) {
			t.Errorf("platforms %q", arches)
		}
	})
}

// checkPodSpec checks what both the DaemonSet and the CronJob need to run
// apply on the node as kubeadm runs kube-proxy: privileged, in the host
// network, on Linux nodes only, at node-critical priority, with the
// ServiceAccount from rbac.yaml, the node name from the downward API, the
// config.yaml ConfigMap and the host's locks; and that the command has each
// of args.
func checkPodSpec(t *testing.T, pod corev1.PodSpec, args ...string) {
	t.Helper()
	if !pod.HostNetwork || pod.ServiceAccountName != "kubectl-svcproxy" || pod.PriorityClassName != "system-node-critical" {
		t.Errorf("hostNetwork %v serviceAccountName %q priorityClassName %q", pod.HostNetwork, pod.ServiceAccountName, pod.PriorityClassName)
	}
	if !reflect.DeepEqual(pod.NodeSelector, map[string]string{"kubernetes.io/os": "linux"}) {
		t.Errorf("nodeSelector %v, want kubernetes.io/os: linux only", pod.NodeSelector)
	}
	if pod.DNSPolicy != corev1.DNSDefault {
		t.Errorf("dnsPolicy %q: cluster DNS is a ClusterIP, which needs the rules this pod writes", pod.DNSPolicy)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	if sc := c.SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged {
		t.Errorf("securityContext %+v: not privileged, so /proc/sys is read-only", sc)
	}
	checkPodEnv(t, c.Env)
	cmd := strings.Join(append(slices.Clone(c.Command), c.Args...), " ")
	for _, arg := range append(args, "--config="+deployConfigDir+"/config.conf", "--node-name=$(NODE_NAME)", "--lock-file=/run/kubectl-svcproxy/", "--state-dir=/run/kubectl-svcproxy",
		"--server=$(APISERVER)", "--cluster-cidr=$(CLUSTER_CIDR)") {
		if !strings.Contains(cmd, arg) {
			t.Errorf("command %q lacks %q", cmd, arg)
		}
	}
	checkPodVolumes(t, pod)
}

// checkPodEnv checks the variables the arguments use: the node's name from
// the downward API, and the server and pod range from the ConfigMap's keys,
// which the user's overlay sets.
func checkPodEnv(t *testing.T, env []corev1.EnvVar) {
	t.Helper()
	want := []corev1.EnvVar{
		{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		configMapEnv("APISERVER", "apiserver"),
		configMapEnv("CLUSTER_CIDR", "cluster-cidr"),
	}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("env %+v, want %+v", env, want)
	}
}

func configMapEnv(name, key string) corev1.EnvVar {
	ref := &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "kubectl-svcproxy"}, Key: key}
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: ref}}
}

// checkPodVolumes checks the pod's one container's mounts: the ConfigMap
// read-only where --config points, and the host's locks and modules.
func checkPodVolumes(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range pod.Containers[0].VolumeMounts {
		mounts[m.Name] = m
	}
	configMounted := false
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == "kubectl-svcproxy" {
			m := mounts[v.Name]
			configMounted = m.MountPath == deployConfigDir && m.ReadOnly
		}
	}
	if !configMounted {
		t.Errorf("the kubectl-svcproxy ConfigMap is not mounted read-only at %s: %+v", deployConfigDir, pod.Volumes)
	}
	fileOrCreate, dirOrCreate := corev1.HostPathFileOrCreate, corev1.HostPathDirectoryOrCreate
	for _, want := range []struct {
		path     string
		typ      *corev1.HostPathType
		readOnly bool
	}{
		{"/run/xtables.lock", &fileOrCreate, false},
		{"/lib/modules", nil, true},
		{"/run/kubectl-svcproxy", &dirOrCreate, false},
	} {
		found := false
		for _, v := range pod.Volumes {
			if v.HostPath == nil || v.HostPath.Path != want.path {
				continue
			}
			found = true
			if !reflect.DeepEqual(v.HostPath.Type, want.typ) {
				t.Errorf("hostPath %s type %v", want.path, v.HostPath.Type)
			}
			if m, ok := mounts[v.Name]; !ok || m.MountPath != want.path || m.ReadOnly != want.readOnly {
				t.Errorf("hostPath %s mounted as %+v", want.path, m)
			}
		}
		if !found {
			t.Errorf("no hostPath volume %s", want.path)
		}
	}
}

// checkWatchContainer parses the DaemonSet's `apply --watch` arguments with
// apply's flags, and checks that the readiness probe asks the /healthz and
// the liveness probe the /livez that healthz (config.conf's
// healthzBindAddress) serves.
func checkWatchContainer(t *testing.T, c corev1.Container, healthz string) {
	t.Helper()
	if len(c.Command) != 1 || c.Command[0] != "kubectl-svcproxy" || len(c.Args) == 0 || c.Args[0] != "apply" {
		t.Fatalf("command %q args %q, want kubectl-svcproxy apply ...", c.Command, c.Args)
	}
	cmd := watchApplyCommand()
	if err := cmd.ParseFlags(c.Args[1:]); err != nil {
		t.Fatalf("daemonset.yaml: apply %q: %v", c.Args[1:], err)
	}
	watch, _ := cmd.Flags().GetBool("watch")
	_, port, err := net.SplitHostPort(healthz)
	if !watch || err != nil {
		t.Fatalf("--watch %v, healthzBindAddress %q: %v", watch, healthz, err)
	}
	for _, probe := range []struct {
		name, path string
		p          *corev1.Probe
	}{{"readinessProbe", "/healthz", c.ReadinessProbe}, {"livenessProbe", "/livez", c.LivenessProbe}} {
		if p := probe.p; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != probe.path || p.HTTPGet.Port.String() != port {
			t.Errorf("%s %+v, want GET %s on port %s", probe.name, p, probe.path, port)
		}
	}
}
