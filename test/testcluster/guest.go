package testcluster

import (
	"net/url"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// GuestKubeconfig writes a copy of the kubeconfig at from (one of the
// Cluster's) for a VM guest that reaches the host's loopback at host: the
// CA inlined, the server at host with the same port, and the TLS server
// name that kube-apiserver's certificate holds (127.0.0.1), so that TLS
// verifies. It returns the copy's path.
func GuestKubeconfig(t testing.TB, from, host string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		t.Fatal(err)
	}
	for _, cl := range cfg.Clusters {
		u, err := url.Parse(cl.Server)
		if err != nil {
			t.Fatal(err)
		}
		cl.TLSServerName = u.Hostname()
		cl.Server = "https://" + host + ":" + u.Port()
	}
	path := filepath.Join(t.TempDir(), "guest.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
