package watch

import (
	"crypto/x509"
	"errors"
	"net/url"
	"syscall"
	"testing"
)

// TestClassifyTLS: a server certificate the client does not trust is a
// wrong kubeconfig, which retrying cannot fix, so apply --watch stops
// with it at once; a refused connection is waited for.
func TestClassifyTLS(t *testing.T) {
	get := func(err error) error {
		return &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/nodes/n", Err: err}
	}
	var perm *PermanentError
	for _, err := range []error{
		get(x509.UnknownAuthorityError{}),
		get(x509.HostnameError{Host: "x"}),
		get(x509.CertificateInvalidError{Reason: x509.Expired}),
	} {
		if !errors.As(classify("get", resNodes, err), &perm) {
			t.Errorf("%v: not a PermanentError", err)
		}
	}
	if errors.As(classify("get", resNodes, get(syscall.ECONNREFUSED)), &perm) {
		t.Error("a refused connection is a PermanentError; want it retried")
	}
}
