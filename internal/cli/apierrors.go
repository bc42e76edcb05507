package cli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// neededPermissions is what the tool's user must be allowed, as
// deploy/base/rbac.yaml grants it.
const neededPermissions = "get, list and watch on nodes and services, endpointslices (discovery.k8s.io) and, optionally, servicecidrs (networking.k8s.io); deploy/base/rbac.yaml has that ClusterRole"

// explainAPIError says what went wrong talking to the API server at host,
// and what to check, for the failures a person can fix: a certificate the
// client does not trust (TLS), credentials the server does not accept
// (401), a permission RBAC does not grant (403), and a server that does not
// answer. err stays wrapped, so its text (the user, verb and resource the
// server names) follows. Other errors are returned as they are.
func explainAPIError(host string, err error) error {
	if err == nil {
		return nil
	}
	if why := tlsProblem(err); why != "" {
		return fmt.Errorf("TLS to the API server at %s failed: %s: %w", host, why, err)
	}
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server at %s rejected the credentials (401 Unauthorized): the token or client certificate of the kubeconfig's user is invalid or expired; check the user's credentials (kubectl config view --minify) or log in again: %w", host, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the API server at %s refused the request (403 Forbidden): the credentials are valid but RBAC does not grant this user what kubectl-svcproxy needs: %s; check with kubectl auth can-i: %w", host, neededPermissions, err)
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return fmt.Errorf("cannot reach the API server at %s (check the server address in the kubeconfig, and that the API server is up and reachable from here): %w", host, err)
	}
	return err
}

// tlsProblem names the TLS failure in err and what to check, or returns "".
func tlsProblem(err error) string {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	switch {
	case errors.As(err, &unknownCA):
		return "its certificate is signed by an authority the client does not trust; check the cluster's certificate-authority (or certificate-authority-data) in the kubeconfig, or --certificate-authority"
	case errors.As(err, &hostname):
		return fmt.Sprintf("its certificate is not valid for %s; check the server address in the kubeconfig, or --tls-server-name", hostname.Host)
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return "its certificate has expired or is not valid yet; check the API server's certificate, and this machine's clock"
	case errors.As(err, &invalid):
		return "its certificate is not valid (" + invalid.Error() + "); check the API server's certificate and the kubeconfig's certificate-authority"
	case errors.As(err, &record), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "the server does not speak TLS at that address; check the server URL (scheme and port) in the kubeconfig"
	case strings.Contains(err.Error(), "remote error: tls:"):
		return "the server refused the TLS handshake; check the client certificate and key (client-certificate, client-key) of the kubeconfig's user"
	}
	return ""
}
