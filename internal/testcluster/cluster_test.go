package testcluster

import (
	"context"
	"strings"
	"testing"

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
