package cli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"
)

// connFlags are kubectl's connection flags: the names, meanings and
// defaults of cli-runtime's ConfigFlags, bound straight to client-go's
// kubeconfig overrides. The tool does not use ConfigFlags itself: its
// package brings in cli-runtime's resource builder and, through it,
// kustomize, which imports Go's plugin package. A binary that imports
// plugin keeps every exported method and exports every symbol
// dynamically; built with cgo (as a plain `go build` does), that was
// 123 MB against 52 MB, and more of it mapped into every process.
type connFlags struct {
	kubeconfig string
	overrides  clientcmd.ConfigOverrides
	// userExtra is --as-user-extra, key=value, repeatable.
	userExtra []string
	// cacheDir is kubectl's discovery cache, which the tool never reads;
	// the flag is kept so that command lines written for kubectl work.
	cacheDir string
	// namespace says whether -n/--namespace is among the flags. The
	// commands leave it out (see flagError); the saved plan's
	// conflict list names it.
	namespace bool
	// api is how the client talks to the API server, as kube-proxy's
	// clientConnection says it; its flags are kube-proxy's, not kubectl's,
	// and inputFlags adds them. Zero leaves client-go's defaults.
	api apiClientFlags
}

// addFlags adds the connection flags to fs.
func (f *connFlags) addFlags(fs *pflag.FlagSet) {
	o := &f.overrides
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to the kubeconfig file to use for CLI requests.")
	fs.StringVar(&f.cacheDir, "cache-dir", defaultCacheDir(), "Default cache directory (accepted as kubectl accepts it; the tool keeps no discovery cache)")
	fs.StringVar(&o.AuthInfo.ClientCertificate, "client-certificate", "", "Path to a client certificate file for TLS")
	fs.StringVar(&o.AuthInfo.ClientKey, "client-key", "", "Path to a client key file for TLS")
	fs.StringVar(&o.AuthInfo.Token, "token", "", "Bearer token for authentication to the API server")
	fs.StringVar(&o.AuthInfo.Impersonate, "as", "", "Username to impersonate for the operation. User could be a regular user or a service account in a namespace.")
	fs.StringVar(&o.AuthInfo.ImpersonateUID, "as-uid", "", "UID to impersonate for the operation.")
	fs.StringArrayVar(&o.AuthInfo.ImpersonateGroups, "as-group", nil, "Group to impersonate for the operation, this flag can be repeated to specify multiple groups.")
	fs.StringArrayVar(&f.userExtra, "as-user-extra", nil, "User extras to impersonate for the operation, this flag can be repeated to specify multiple values for the same key.")
	fs.StringVar(&o.Context.Cluster, "cluster", "", "The name of the kubeconfig cluster to use")
	fs.StringVar(&o.Context.AuthInfo, "user", "", "The name of the kubeconfig user to use")
	if f.namespace {
		fs.StringVarP(&o.Context.Namespace, "namespace", "n", "", "If present, the namespace scope for this CLI request")
	}
	fs.StringVar(&o.CurrentContext, "context", "", "The name of the kubeconfig context to use")
	fs.StringVarP(&o.ClusterInfo.Server, "server", "s", "", "The address and port of the Kubernetes API server")
	fs.StringVar(&o.ClusterInfo.TLSServerName, "tls-server-name", "", "Server name to use for server certificate validation. If it is not provided, the hostname used to contact the server is used")
	fs.BoolVar(&o.ClusterInfo.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "If true, the server's certificate will not be checked for validity. This will make your HTTPS connections insecure")
	fs.StringVar(&o.ClusterInfo.CertificateAuthority, "certificate-authority", "", "Path to a cert file for the certificate authority")
	fs.StringVar(&o.Timeout, "request-timeout", "0", "The length of time to wait before giving up on a single server request. Non-zero values should contain a corresponding time unit (e.g. 1s, 2m, 3h). A value of zero means don't timeout requests.")
	fs.BoolVar(&o.ClusterInfo.DisableCompression, "disable-compression", false, "If true, opt-out of response compression for all requests to the server")
	fs.StringVar(&o.ClusterInfo.ProxyURL, "proxy-url", "", "Proxy URL to use for requests to the API server")
}

// restConfig is the client configuration that the kubeconfig and the
// flags give, as kubectl resolves it: the kubeconfig's loading rules
// (--kubeconfig, then $KUBECONFIG, then ~/.kube/config), the in-cluster
// configuration when there is none (and, without that either, kubectl's
// old default of http://localhost:8080), and the flags over both. It
// never prompts for a password, as kubectl may for a basic-auth user
// without one: the tool runs unattended (cron, DaemonSet).
func (f *connFlags) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
	rules.ExplicitPath = f.kubeconfig
	overrides := f.overrides
	overrides.ClusterDefaults = clientcmd.ClusterDefaults
	overrides.AuthInfo.ImpersonateUserExtra = userExtras(f.userExtra)
	if err := f.api.validate(); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &overrides).ClientConfig()
	if err != nil {
		return nil, err
	}
	f.api.apply(cfg)
	return cfg, nil
}

// userExtras parses --as-user-extra's key=value pairs, skipping any
// without "=", as kubectl does.
func userExtras(pairs []string) map[string][]string {
	if len(pairs) == 0 {
		return nil
	}
	out := make(map[string][]string)
	for _, pair := range pairs {
		key, value, ok := strings.Cut(pair, "=")
		if ok {
			out[key] = append(out[key], value)
		}
	}
	return out
}

// defaultCacheDir is kubectl's default for --cache-dir: $KUBECACHEDIR, or
// ~/.kube/cache.
func defaultCacheDir() string {
	if dir := os.Getenv("KUBECACHEDIR"); dir != "" {
		return dir
	}
	return filepath.Join(homedir.HomeDir(), ".kube", "cache")
}
