package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
)

// TestAPIErrors checks that each way of failing to talk to a real API
// server gets its own message, saying what is wrong and what to check:
// a CA that did not sign the server's certificate, a server name the
// certificate does not hold, a token the server does not know (401), and
// a user that RBAC does not allow to list Services (403).
func TestAPIErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real kube-apiserver and etcd")
	}
	c := testcluster.StartWithRBAC(t)
	c.Apply(t, apiserverObjects)
	otherCA := writeCA(t, time.Now().Add(time.Hour))
	node := "--node-name=node1"
	for _, tc := range []struct {
		name  string
		args  []string
		wants []string
	}{
		{"unknown authority", []string{"--kubeconfig=" + c.UserKubeconfig, "--certificate-authority=" + otherCA},
			[]string{"TLS to the API server at " + c.Server + " failed", "signed by an authority the client does not trust", "certificate-authority", "x509: certificate signed by unknown authority"}},
		{"server name", []string{"--kubeconfig=" + c.UserKubeconfig, "--tls-server-name=not-the-apiserver.example"},
			[]string{"TLS to the API server", "not valid for not-the-apiserver.example", "--tls-server-name"}},
		{"401", []string{"--kubeconfig=" + c.WriteKubeconfig(t, "intruder", "not-a-token")},
			[]string{"401 Unauthorized", "token or client certificate", "Unauthorized"}},
		{"403", []string{"--kubeconfig=" + c.OtherKubeconfig},
			[]string{"403 Forbidden", "RBAC", "list and watch", "endpointslices", "servicecidrs", "deploy/base/rbac.yaml", `User "other" cannot`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"render", node}, tc.args...)
			// RBAC may need a moment to see the bindings just made; until
			// then "other" may not get its Node either.
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				if _, stderr, _ := run(t, "", args...); !strings.Contains(stderr, `"nodes"`) {
					break
				}
			}
			expectError(t, args, tc.wants...)
			_, stderr, _ := run(t, "", args...)
			if strings.Contains(stderr, "cannot reach") {
				t.Errorf("reported as unreachable: %s", stderr)
			}
		})
	}
}

// TestAPIErrorsExpiredAndPlainHTTP covers what the test API server cannot
// show: an expired certificate, and a server that does not speak TLS.
func TestAPIErrorsExpiredAndPlainHTTP(t *testing.T) {
	expired := httptest.NewUnstartedServer(http.NotFoundHandler())
	expired.TLS = expiredTLS(t)
	expired.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes fail, as they should
	expired.StartTLS()
	defer expired.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	ca := writeCA(t, time.Now().Add(time.Hour))
	empty := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(empty, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		server string
		args   []string
		want   string
	}{
		{expired.URL, []string{"--certificate-authority=" + writeCert(t, expired.TLS.Certificates[0].Certificate[0])}, "has expired or is not valid yet"},
		{"https://" + strings.TrimPrefix(plain.URL, "http://"), []string{"--certificate-authority=" + ca}, "does not speak TLS"},
	} {
		args := append([]string{"render", "--node-name=node1", "--server=" + tc.server, "--kubeconfig=" + empty}, tc.args...)
		expectError(t, args, "TLS to the API server at "+tc.server, tc.want)
	}
	if err := explainAPIError("h", errors.New("other")); err.Error() != "other" {
		t.Errorf("an unknown error was changed: %v", err)
	}
}

// expiredTLS is a server configuration with a self-signed certificate for
// 127.0.0.1 that expired an hour ago.
func expiredTLS(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "expired"},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// writeCA writes a new self-signed CA certificate, valid until notAfter,
// and returns its path.
func writeCA(t *testing.T, notAfter time.Time) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not the cluster's CA"},
		NotBefore: notAfter.Add(-48 * time.Hour), NotAfter: notAfter,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return writeCert(t, der)
}

func writeCert(t *testing.T, der []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
