package watch

import (
	"crypto/x509"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// classify wraps err with the verb and resource, as a PermanentError when
// retrying cannot help.
func classify(verb, resource string, err error) error {
	err = fmt.Errorf("%s %s: %w", verb, resource, err)
	switch {
	case apierrors.IsUnauthorized(err):
		return &PermanentError{err}
	case apierrors.IsForbidden(err), apierrors.IsNotFound(err), untrusted(err):
		return &PermanentError{err}
	}
	return err
}

// untrusted says whether err is a server certificate that the client does
// not trust: a wrong CA or server name in the kubeconfig, which no retry
// fixes.
func untrusted(err error) bool {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid)
}

// PermanentError is a problem that retrying cannot fix: Run returns it
// rather than wait for the API server.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }
