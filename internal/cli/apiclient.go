package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
)

// The defaults of kube-proxy v1.37's clientConnection
// (pkg/proxy/apis/config/v1alpha1/defaults.go).
const (
	defaultContentType = "application/vnd.kubernetes.protobuf"
	defaultQPS         = 5
	defaultBurst       = 10
)

// apiClientFlags are kube-proxy's settings of its API client: the content
// type it sends and asks for, and its client-side rate limit. The same
// defaults give the same load on the API server per node: protobuf is
// smaller and cheaper to decode than JSON, and the rate limit bounds what
// a node's relists cost after an outage.
type apiClientFlags struct {
	// contentType, qps and burst are --kube-api-content-type,
	// --kube-api-qps and --kube-api-burst, kube-proxy's flags (and its
	// config file's clientConnection.contentType, qps and burst).
	contentType string
	qps         float32
	burst       int32
	// acceptContentTypes is clientConnection.acceptContentTypes, which
	// kube-proxy has no flag for; empty accepts contentType.
	acceptContentTypes string
}

func (a *apiClientFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&a.contentType, "kube-api-content-type", defaultContentType, "Content type of requests sent to apiserver (kube-proxy's flag).")
	fs.Float32Var(&a.qps, "kube-api-qps", defaultQPS, "QPS to use while talking with kubernetes apiserver (kube-proxy's flag).")
	fs.Int32Var(&a.burst, "kube-api-burst", defaultBurst, "Burst to use while talking with kubernetes apiserver (kube-proxy's flag).")
}

// validate refuses what client-go would fail on later, less clearly: a
// negative burst. (A negative QPS turns the rate limit off, as in
// client-go and kube-proxy.)
func (a *apiClientFlags) validate() error {
	if a.burst < 0 {
		return fmt.Errorf("--kube-api-burst %d: must not be negative", a.burst)
	}
	return nil
}

// apply sets them on cfg, as kube-proxy's createClient does.
func (a *apiClientFlags) apply(cfg *rest.Config) {
	cfg.AcceptContentTypes = a.acceptContentTypes
	cfg.ContentType = a.contentType
	cfg.QPS = a.qps
	cfg.Burst = int(a.burst)
}

// settings adds the file's client settings to s under kube-proxy's flag
// names. A zero is unset, as kube-proxy's defaulting takes it.
func (c clientConnectionConfig) settings(s settings) {
	s.add("kube-api-content-type", "clientConnection.contentType", c.ContentType)
	if c.QPS != 0 {
		s.add("kube-api-qps", "clientConnection.qps", strconv.FormatFloat(float64(c.QPS), 'g', -1, 32))
	}
	if c.Burst != 0 {
		s.add("kube-api-burst", "clientConnection.burst", strconv.Itoa(int(c.Burst)))
	}
}
