package testcluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The users of the test cluster's --token-auth-file.
const (
	// AdminUser is in group system:masters: it may do everything.
	AdminUser = "admin"
	// User is the least-privileged user that kubectl-svcproxy runs as: it
	// has no groups, so no rights until a test binds a role to it.
	User = "svcproxy"
	// OtherUser has no groups either, for tests of partial rights.
	OtherUser = "other"
)

// user is one line of the token file.
type user struct {
	name   string
	token  string
	groups []string
}

// newUsers returns the cluster's users, each with a random token.
func newUsers() []user {
	return []user{
		{name: AdminUser, token: randomToken(), groups: []string{"system:masters"}},
		{name: User, token: randomToken()},
		{name: OtherUser, token: randomToken()},
	}
}

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// writeTokenFile writes kube-apiserver's --token-auth-file, whose lines
// are token,user,uid[,"group1,group2"].
func writeTokenFile(path string, users []user) error {
	var b strings.Builder
	for _, u := range users {
		fmt.Fprintf(&b, "%s,%s,%s", u.token, u.name, u.name)
		if len(u.groups) > 0 {
			fmt.Fprintf(&b, ",%q", strings.Join(u.groups, ","))
		}
		b.WriteString("\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// writeServiceAccountKey writes a new RSA key, for kube-apiserver's
// --service-account-key-file and --service-account-signing-key-file.
func writeServiceAccountKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	return os.WriteFile(path, pem.EncodeToMemory(block), 0o600)
}

// WriteKubeconfig writes a kubeconfig that reaches the cluster with the
// bearer token given, and returns its path. Tests use it for tokens the
// cluster does not know.
func (c *Cluster) WriteKubeconfig(t testing.TB, name, token string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testcluster"] = &clientcmdapi.Cluster{
		Server:               c.Server,
		CertificateAuthority: c.caFile,
	}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "testcluster", AuthInfo: name}
	cfg.CurrentContext = name
	path := filepath.Join(c.dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	return path
}
