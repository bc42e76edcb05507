package testcluster

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestStart(t *testing.T) {
	c := Start(t)
	ctx := context.Background()
	svc, err := c.Admin.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.96.0.1" {
		t.Errorf("default/kubernetes has ClusterIP %s, want the first of %s", svc.Spec.ClusterIP, ServiceCIDR)
	}
	// The least-privileged user authenticates but may not read anything yet.
	restConfig, err := clientcmd.BuildConfigFromFlags("", c.UserKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	user := kubernetes.NewForConfigOrDie(restConfig)
	_, err = user.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `"`+User+`"`) {
		t.Errorf("list services as %s: %v, want forbidden", User, err)
	}
	// kubectl talks to it as admin.
	if out := c.Kubectl(t, "", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); out != AdminUser {
		t.Errorf("kubectl auth whoami: %q, want %q", out, AdminUser)
	}
}

// TestRestartAPIServer stops kube-apiserver and starts it again: the same
// address, data and credentials, so the clients made before still work.
func TestRestartAPIServer(t *testing.T) {
	c := Start(t)
	ctx := t.Context()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: "default"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}
	if _, err := c.Admin.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.StopAPIServer()
	if _, err := c.Admin.CoreV1().Services("default").Get(ctx, "kept", metav1.GetOptions{}); err == nil {
		t.Fatal("kube-apiserver still answers after StopAPIServer")
	}
	c.StartAPIServer(t)
	if _, err := c.Admin.CoreV1().Services("default").Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	if out := c.Kubectl(t, "", "get", "service", "kept", "-o", "name"); strings.TrimSpace(out) != "service/kept" {
		t.Errorf("kubectl after the restart: %q", out)
	}
}
