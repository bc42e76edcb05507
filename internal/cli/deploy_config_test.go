package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// deployConfigDir is where the pods mount the kubectl-svcproxy ConfigMap
// of deploy/base/config.yaml, as kubeadm mounts kube-proxy's at
// /var/lib/kube-proxy.
const deployConfigDir = "/var/lib/kubectl-svcproxy"

// The service-account files the kubelet mounts into every pod.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// deployConfigMap returns deploy/base/config.yaml's one ConfigMap.
func deployConfigMap(t *testing.T) corev1.ConfigMap {
	t.Helper()
	docs := deployDocuments(t, "base/config.yaml")
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

// TestDeployConfigMap checks deploy/base/config.yaml as kubeadm's kube-proxy
// ConfigMap: a kubeconfig with the pod's ServiceAccount token and CA and no
// server (the pods pass --server from the apiserver key, which the user's
// overlay adds: never the kubernetes Service's ClusterIP, which needs the
// rules the pod writes), a KubeProxyConfiguration that the tool accepts
// and that points at it, and the cluster-cidr key's default.
func TestDeployConfigMap(t *testing.T) {
	cm := deployConfigMap(t)
	keys := []string{}
	for k := range cm.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"cluster-cidr", "config.conf", "kubeconfig.conf"}) {
		t.Errorf("keys %q, want cluster-cidr, config.conf and kubeconfig.conf", keys)
	}
	if cm.Data["cluster-cidr"] != "10.244.0.0/16" {
		t.Errorf("cluster-cidr %q", cm.Data["cluster-cidr"])
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
	if cluster.Server != "" || cluster.CertificateAuthority != serviceAccountDir+"/ca.crt" {
		t.Errorf("kubeconfig.conf: server %q CA %q", cluster.Server, cluster.CertificateAuthority)
	}
	if user.TokenFile != serviceAccountDir+"/token" || user.Token != "" || user.ClientCertificate != "" {
		t.Errorf("kubeconfig.conf: user %+v, want the ServiceAccount's token file only", user)
	}
	c := deployConfig(t)
	// The mode and the pod range are flags, which win over config.conf:
	// set here too, they would only mislead.
	if c.Mode != "" || c.ClusterCIDR != "" || c.ClientConnection.Kubeconfig != deployConfigDir+"/kubeconfig.conf" {
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
