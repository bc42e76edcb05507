package cli

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// TestConnFlagsAreKubectls holds connFlags to cli-runtime's ConfigFlags,
// which kubectl uses: the same flags, shorthands, types and defaults.
func TestConnFlagsAreKubectls(t *testing.T) {
	theirs := pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
	genericclioptions.NewConfigFlags(true).AddFlags(theirs)
	ours := pflag.NewFlagSet("svcproxy", pflag.ContinueOnError)
	(&connFlags{namespace: true}).addFlags(ours)
	theirs.VisitAll(func(want *pflag.Flag) {
		got := ours.Lookup(want.Name)
		if got == nil {
			t.Errorf("--%s is missing", want.Name)
			return
		}
		if got.Shorthand != want.Shorthand || got.DefValue != want.DefValue || got.Value.Type() != want.Value.Type() {
			t.Errorf("--%s: shorthand %q, default %q, type %s; kubectl's: %q, %q, %s",
				want.Name, got.Shorthand, got.DefValue, got.Value.Type(), want.Shorthand, want.DefValue, want.Value.Type())
		}
	})
	ours.VisitAll(func(f *pflag.Flag) {
		if theirs.Lookup(f.Name) == nil {
			t.Errorf("--%s is not one of kubectl's connection flags", f.Name)
		}
	})
	without := pflag.NewFlagSet("commands", pflag.ContinueOnError)
	(&connFlags{}).addFlags(without)
	if without.Lookup("namespace") != nil {
		t.Error("the commands' connection flags include --namespace")
	}
}

// connKubeconfig has two contexts on two clusters, with a token user and
// a basic-auth user; it resolves without touching the network.
const connKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: 'https://a.example:6443', insecure-skip-tls-verify: true}
- name: b
  cluster: {server: 'https://b.example:443', tls-server-name: b-internal}
users:
- name: tok
  user: {token: from-file}
- name: basic
  user: {username: u, password: p}
contexts:
- name: ca
  context: {cluster: a, user: tok, namespace: one}
- name: cb
  context: {cluster: b, user: basic}
current-context: ca
`

// TestConnFlagsResolveAsKubectl resolves the same command lines with
// connFlags and with cli-runtime's ConfigFlags, against one kubeconfig,
// and wants the same client configuration from both.
func TestConnFlagsResolveAsKubectl(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(connKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	for _, args := range [][]string{
		{"--kubeconfig", path},
		{"--kubeconfig", path, "--context", "cb"},
		{"--kubeconfig", path, "--cluster", "b", "--user", "basic"},
		{"--kubeconfig", path, "-s", "https://c.example:8443", "--token", "flag-token", "--insecure-skip-tls-verify"},
		{"--kubeconfig", path, "--as", "alice", "--as-uid", "7", "--as-group", "g1", "--as-group", "g2", "--as-user-extra", "k=v1", "--as-user-extra", "k=v2", "--as-user-extra", "bad"},
		{"--kubeconfig", path, "--request-timeout", "5s", "--disable-compression", "--proxy-url", "http://proxy.example:3128", "--tls-server-name", "other"},
		{"--kubeconfig", path, "--context", "cb"},
		{"--kubeconfig", path + ".absent"},
		{},
	} {
		theirs := genericclioptions.NewConfigFlags(true)
		theirFlags := pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
		theirs.AddFlags(theirFlags)
		ours := &connFlags{namespace: true}
		ourFlags := pflag.NewFlagSet("svcproxy", pflag.ContinueOnError)
		ours.addFlags(ourFlags)
		if err := theirFlags.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := ourFlags.Parse(args); err != nil {
			t.Fatal(err)
		}
		want, wantErr := theirs.ToRESTConfig()
		got, gotErr := ours.restConfig()
		if (wantErr != nil) != (gotErr != nil) {
			t.Errorf("%q: error %v, kubectl's %v", args, gotErr, wantErr)
			continue
		}
		if gotErr != nil {
			continue
		}
		// Proxy is a function, equal only to itself; both must have one.
		if (got.Proxy == nil) != (want.Proxy == nil) {
			t.Errorf("%q: proxy function %v, kubectl's %v", args, got.Proxy != nil, want.Proxy != nil)
		}
		got.Proxy, want.Proxy = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n got %+v\nwant %+v", args, got, want)
		}
	}
}
