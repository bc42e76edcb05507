package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// deployConfigDir is where the pods mount the kubectl-svcproxy ConfigMap
// of deploy/config.yaml, as kubeadm mounts kube-proxy's at
// /var/lib/kube-proxy.
const deployConfigDir = "/var/lib/kubectl-svcproxy"

// The strings deploy/config.yaml tells the user to replace, and the
// service-account files the kubelet mounts into every pod.
const (
	deployServerPlaceholder = "https://control-plane.example.invalid:6443"
	serviceAccountDir       = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// deployConfigMap returns deploy/config.yaml's one ConfigMap.
func deployConfigMap(t *testing.T) corev1.ConfigMap {
	t.Helper()
	docs := deployDocuments(t, "config.yaml")
	if len(docs) != 1 || kindOf(t, "config.yaml", docs[0]) != "v1 ConfigMap" {
		t.Fatalf("config.yaml: want one v1 ConfigMap, got %d documents", len(docs))
	}
	var cm corev1.ConfigMap
	decodeStrict(t, "config.yaml", docs[0], &cm)
	if cm.Name != "kubectl-svcproxy" || cm.Namespace != "kube-system" {
		t.Fatalf("config.yaml: ConfigMap %s/%s", cm.Namespace, cm.Name)
	}
	return cm
}

// deployConfig reads the ConfigMap's config.conf as the tool reads
// --config: strictly, against kube-proxy's schema.
func deployConfig(t *testing.T) *configFile {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.conf")
	if err := os.WriteFile(path, []byte(deployConfigMap(t).Data["config.conf"]), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := readConfigFile(path)
	if err != nil {
		t.Fatalf("config.yaml: config.conf: %v", err)
	}
	return c
}

// TestDeployConfigMap checks deploy/config.yaml as kubeadm's kube-proxy
// ConfigMap: a kubeconfig that reaches the control plane by the address the
// user puts in (never the kubernetes Service's ClusterIP, which needs the
// rules the pod writes) with the pod's ServiceAccount token and CA, and a
// KubeProxyConfiguration that the tool accepts and that points at it.
func TestDeployConfigMap(t *testing.T) {
	cm := deployConfigMap(t)
	keys := []string{}
	for k := range cm.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"config.conf", "kubeconfig.conf"}) {
		t.Errorf("keys %q, want config.conf and kubeconfig.conf", keys)
	}
	kc, err := clientcmd.Load([]byte(cm.Data["kubeconfig.conf"]))
	if err != nil {
		t.Fatalf("kubeconfig.conf: %v", err)
	}
	ctx := kc.Contexts[kc.CurrentContext]
	if ctx == nil || kc.Clusters[ctx.Cluster] == nil || kc.AuthInfos[ctx.AuthInfo] == nil {
		t.Fatalf("kubeconfig.conf: current context %q is incomplete", kc.CurrentContext)
	}
	cluster, user := kc.Clusters[ctx.Cluster], kc.AuthInfos[ctx.AuthInfo]
	if cluster.Server != deployServerPlaceholder || cluster.CertificateAuthority != serviceAccountDir+"/ca.crt" {
		t.Errorf("kubeconfig.conf: server %q CA %q", cluster.Server, cluster.CertificateAuthority)
	}
	if user.TokenFile != serviceAccountDir+"/token" || user.Token != "" || user.ClientCertificate != "" {
		t.Errorf("kubeconfig.conf: user %+v, want the ServiceAccount's token file only", user)
	}
	c := deployConfig(t)
	if c.Mode != "iptables" || c.ClusterCIDR == "" || c.ClientConnection.Kubeconfig != deployConfigDir+"/kubeconfig.conf" {
		t.Errorf("config.conf: mode %q clusterCIDR %q clientConnection.kubeconfig %q", c.Mode, c.ClusterCIDR, c.ClientConnection.Kubeconfig)
	}
	if c.MetricsBindAddress != "127.0.0.1:10249" || c.HealthzBindAddress != "0.0.0.0:10256" {
		t.Errorf("config.conf: metrics %q healthz %q, want kube-proxy's", c.MetricsBindAddress, c.HealthzBindAddress)
	}
	if _, stderr, code := run(t, "", "render", "--example", "--config", c.path); code != ExitOK {
		t.Errorf("render --config config.conf: exit %d, %s", code, stderr)
	}
}

// checkCronJobExitCodes checks that the CronJob's Job fails at once, naming
// the exit code, for plan's 1 (drift) and every command's 2 (error), and
// never retries on its own: the next schedule does.
func checkCronJobExitCodes(t *testing.T, job batchv1.JobSpec) {
	t.Helper()
	if job.BackoffLimit == nil || *job.BackoffLimit != 0 || job.PodFailurePolicy == nil || len(job.PodFailurePolicy.Rules) != 1 {
		t.Fatalf("backoffLimit %v podFailurePolicy %+v", job.BackoffLimit, job.PodFailurePolicy)
	}
	r := job.PodFailurePolicy.Rules[0]
	codes := r.OnExitCodes
	if r.Action != batchv1.PodFailurePolicyActionFailJob || codes == nil || codes.Operator != batchv1.PodFailurePolicyOnExitCodesOpIn ||
		codes.ContainerName == nil || *codes.ContainerName != "kubectl-svcproxy" || !slices.Equal(codes.Values, []int32{ExitChanges, ExitError}) {
		t.Errorf("podFailurePolicy rule %+v, want FailJob on exit codes %d and %d", r, ExitChanges, ExitError)
	}
}

// TestDeployManifestsScript checks hack/manifests.sh, docs/DEPLOY.md's deploy
// command: every placeholder is replaced by the value given, in objects
// that still decode strictly, and none is left outside the comments.
func TestDeployManifestsScript(t *testing.T) {
	args := []string{"--server", "https://192.0.2.10:6443", "--image", "registry.example/svcproxy:v1", "--mode", "nftables", "--cluster-cidr", "10.32.0.0/12"}
	for _, cron := range []string{"", "worker-1"} {
		cmdArgs := args
		if cron != "" {
			cmdArgs = append(slices.Clone(args), "--cronjob", cron)
		}
		out, err := exec.Command("../../hack/manifests.sh", cmdArgs...).Output()
		if err != nil {
			t.Fatalf("hack/manifests.sh %q: %v", cmdArgs, err)
		}
		text := string(stripComments(out))
		for _, placeholder := range []string{deployServerPlaceholder, "ghcr.io/", "mode: iptables", "10.244.0.0/16", "node-name-placeholder"} {
			if strings.Contains(text, placeholder) {
				t.Errorf("cronjob %q: %q is left in:\n%s", cron, placeholder, text)
			}
		}
		for _, want := range []string{"server: https://192.0.2.10:6443", "image: registry.example/svcproxy:v1", "mode: nftables", "clusterCIDR: 10.32.0.0/12"} {
			if !strings.Contains(text, want) {
				t.Errorf("cronjob %q: output lacks %q", cron, want)
			}
		}
		if cron != "" && !strings.Contains(text, "nodeName: "+cron) {
			t.Errorf("the CronJob is not pinned to %s", cron)
		}
	}
	if err := exec.Command("../../hack/manifests.sh", "--server", "http://192.0.2.10", "--image", "x").Run(); err == nil {
		t.Error("a server that is not https:// was accepted")
	}
}
