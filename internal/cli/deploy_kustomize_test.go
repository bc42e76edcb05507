package cli

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/healthcheck"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/deploykit"
)

// renderedObjects renders a kustomization with kubectl's kustomize and
// returns its objects by "Kind name", each document as rendered, and the
// kinds in the order kustomize wrote them.
func renderedObjects(t *testing.T, kubectl, dir string) (map[string][]byte, []string) {
	t.Helper()
	out := deploykit.Render(t, kubectl, dir)
	objects := map[string][]byte{}
	var kinds []string
	for _, doc := range splitDocuments(t, dir, []byte(out)) {
		var meta struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		key := meta.Kind + " " + meta.Metadata.Name
		if _, dup := objects[key]; dup {
			t.Fatalf("%s: %s twice", dir, key)
		}
		objects[key] = doc
		kinds = append(kinds, meta.Kind)
	}
	return objects, kinds
}

// renderedDaemonSet decodes the one DaemonSet of a rendering strictly.
func renderedDaemonSet(t *testing.T, name string, objects map[string][]byte) appsv1.DaemonSet {
	t.Helper()
	doc, ok := objects["DaemonSet kubectl-svcproxy"]
	if !ok {
		t.Fatalf("%s: no DaemonSet kubectl-svcproxy", name)
	}
	var ds appsv1.DaemonSet
	decodeStrict(t, name, doc, &ds)
	return ds
}

// TestDeployKustomizeOverlays renders deploy/base and every overlay of
// deploy/overlays with kubectl's kustomize, as `kubectl apply -k` does, and
// checks that each overlay is the base with only the DaemonSet's arguments
// changed to run its mode: the same RBAC, ConfigMap and pod otherwise.
func TestDeployKustomizeOverlays(t *testing.T) {
	kubectl := deploykit.Kubectl(t)
	base, kinds := renderedObjects(t, kubectl, deploykit.Dir(t, "base"))
	wantKinds := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet"}
	if !slices.Equal(kinds, wantKinds) {
		t.Fatalf("deploy/base renders %q, want %q", kinds, wantKinds)
	}
	baseDS := renderedDaemonSet(t, "deploy/base", base)
	baseArgs := baseDS.Spec.Template.Spec.Containers[0].Args
	if slices.ContainsFunc(baseArgs, func(a string) bool { return strings.HasPrefix(a, "--mode") }) {
		t.Errorf("deploy/base's DaemonSet has a mode of its own: %q", baseArgs)
	}
	for _, mode := range deploykit.Modes {
		t.Run(mode, func(t *testing.T) {
			name := "deploy/overlays/" + mode
			objects, _ := renderedObjects(t, kubectl, deploykit.Dir(t, "overlays/"+mode))
			if len(objects) != len(base) {
				t.Errorf("%s renders %d objects, the base %d", name, len(objects), len(base))
			}
			for key, doc := range base {
				if key != "DaemonSet kubectl-svcproxy" && string(objects[key]) != string(doc) {
					t.Errorf("%s: %s differs from the base's:\n%s", name, key, objects[key])
				}
			}
			ds := renderedDaemonSet(t, name, objects)
			c := ds.Spec.Template.Spec.Containers[0]
			wantArgs := append(slices.Clone(baseArgs), "--mode="+mode)
			if mode == "userspace" {
				wantArgs = append([]string{"proxy"}, wantArgs[2:]...)
			}
			if !slices.Equal(c.Args, wantArgs) {
				t.Errorf("%s: args %q, want %q", name, c.Args, wantArgs)
			}
			checkOverlayMode(t, c, mode)
			checkProbesServed(t, c)
			// Apart from the arguments (and, for proxy, the liveness
			// probe's path), the DaemonSet is the base's.
			ds.Spec.Template.Spec.Containers[0].Args = baseArgs
			ds.Spec.Template.Spec.Containers[0].LivenessProbe = baseDS.Spec.Template.Spec.Containers[0].LivenessProbe
			if !reflect.DeepEqual(ds, baseDS) {
				t.Errorf("%s: the DaemonSet differs from the base's in more than its arguments", name)
			}
		})
	}
}

// checkProbesServed: every probe asks a path that the container's command
// serves: apply --watch has kube-proxy v1.37's /healthz and /livez,
// proxy v1.25's /healthz alone; a probe of a path it does not serve
// would restart the pod.
func checkProbesServed(t *testing.T, c corev1.Container) {
	t.Helper()
	served := map[string]bool{healthcheck.PathHealthz: true, healthcheck.PathLivez: c.Args[0] != "proxy"}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s probe", c.Args[0], name)
			continue
		}
		if !served[p.HTTPGet.Path] {
			t.Errorf("%s: the %s probe asks %s, which %s does not serve", c.Args[0], name, p.HTTPGet.Path, c.Args[0])
		}
	}
}

// checkOverlayMode parses the container's arguments with the command they
// name and checks the mode they set, then what every DaemonSet needs.
func checkOverlayMode(t *testing.T, c corev1.Container, mode string) {
	t.Helper()
	cmd, _, err := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard()).Find(c.Args[:1])
	if err != nil || cmd.Name() != c.Args[0] {
		t.Fatalf("command %q: %v", c.Args[0], err)
	}
	if err := cmd.ParseFlags(c.Args[1:]); err != nil {
		t.Fatalf("%s %q: %v", c.Args[0], c.Args[1:], err)
	}
	if got, _ := cmd.Flags().GetString("mode"); got != mode {
		t.Errorf("--mode %q, want %q", got, mode)
	}
	want := "apply"
	if mode == "userspace" {
		want = "proxy" // the long-running userspace proxy; apply only writes rules
	}
	if c.Args[0] != want {
		t.Errorf("runs %q, want %q", c.Args[0], want)
	}
}

// TestDeployKustomizeUserOverlay renders the user's overlay of
// docs/DEPLOY.md on top of an overlay of deploy/: the image and the
// ConfigMap's keys are the user's, nothing else changes name, and the pod
// reads the server and pod range as flags.
func TestDeployKustomizeUserOverlay(t *testing.T) {
	kubectl := deploykit.Kubectl(t)
	dir := deploykit.WriteOverlay(t, filepath.Join(t.TempDir(), "mycluster"), deploykit.User{
		Mode: "nftables", Image: "registry.example:5000/svcproxy:v1",
		APIServer: "https://192.0.2.10:6443", ClusterCIDR: "10.32.0.0/12",
	})
	objects, _ := renderedObjects(t, kubectl, dir)
	var cm corev1.ConfigMap
	decodeStrict(t, dir, objects["ConfigMap kubectl-svcproxy"], &cm)
	if cm.Namespace != "kube-system" || cm.Data["apiserver"] != "https://192.0.2.10:6443" || cm.Data["cluster-cidr"] != "10.32.0.0/12" {
		t.Errorf("ConfigMap %s/%s data %q", cm.Namespace, cm.Name, cm.Data)
	}
	for _, key := range []string{"config.conf", "kubeconfig.conf"} {
		if cm.Data[key] == "" {
			t.Errorf("the user's overlay lost the ConfigMap's %s", key)
		}
	}
	ds := renderedDaemonSet(t, dir, objects)
	c := ds.Spec.Template.Spec.Containers[0]
	if c.Image != "registry.example:5000/svcproxy:v1" {
		t.Errorf("image %q", c.Image)
	}
	checkPodSpec(t, ds.Spec.Template.Spec, "apply", "--watch", "--mode=nftables")
	checkWatchContainer(t, c, deployConfig(t).HealthzBindAddress)
}

// TestDeployKustomizeCronJob renders deploy/cronjob: the base's RBAC and
// ConfigMap, unchanged, and the CronJob in place of the DaemonSet.
func TestDeployKustomizeCronJob(t *testing.T) {
	kubectl := deploykit.Kubectl(t)
	base, _ := renderedObjects(t, kubectl, deploykit.Dir(t, "base"))
	objects, kinds := renderedObjects(t, kubectl, deploykit.Dir(t, "cronjob"))
	want := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "CronJob"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("deploy/cronjob renders %q, want %q", kinds, want)
	}
	for key, doc := range base {
		if key != "DaemonSet kubectl-svcproxy" && string(objects[key]) != string(doc) {
			t.Errorf("deploy/cronjob: %s differs from the base's:\n%s", key, objects[key])
		}
	}
	var cj batchv1.CronJob
	decodeStrict(t, "deploy/cronjob", objects["CronJob kubectl-svcproxy-node-name-placeholder"], &cj)
	checkPodSpec(t, cj.Spec.JobTemplate.Spec.Template.Spec, "apply", "--lock-wait=60s")
}
