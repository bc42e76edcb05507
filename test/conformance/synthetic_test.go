package conformance

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestCreateRetrying checks that a create is retried after the API
// server's timeout, that AlreadyExists then counts as created, and that
// other errors, and AlreadyExists on the first call, are returned.
func TestCreateRetrying(t *testing.T) {
	timeout := apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
	exists := apierrors.NewAlreadyExists(schema.GroupResource{Resource: "services"}, "svc1")
	other := errors.New("refused")
	for _, tc := range []struct {
		name    string
		results []error
		calls   int
		want    error
	}{
		{"created", []error{nil}, 1, nil},
		{"timed out, then created", []error{timeout, nil}, 2, nil},
		{"timed out but got through", []error{timeout, exists}, 2, nil},
		{"exists from the start", []error{exists}, 1, exists},
		{"other error", []error{other}, 1, other},
		{"always timing out", []error{timeout, timeout, timeout, timeout, timeout, timeout}, 5, timeout},
	} {
		calls := 0
		err := createRetrying(func() error {
			calls++
			return tc.results[calls-1]
		})
		if !errors.Is(err, tc.want) || calls != tc.calls {
			t.Errorf("%s: %v after %d calls, want %v after %d", tc.name, err, calls, tc.want, tc.calls)
		}
	}
}
