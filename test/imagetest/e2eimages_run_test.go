package imagetest

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runE2EImages runs the images' processes as their pods do, in one new
// network, mount and PID namespace (loopback only; everything dies with
// it), each chrooted in its image with the host's /dev and a /proc, as a
// runtime gives them: agnhost's netexec and nginx serve, agnhost's
// curl, wget and nc and busybox's nc and wget reach them, glibc's getent reads the
// image's users, the iptables image runs conntrack, and pause exits 0 on
// SIGTERM.
func runE2EImages(t *testing.T, roots map[string]string) {
	var script strings.Builder
	script.WriteString("set -e\n")
	for _, root := range roots {
		script.WriteString("mount --bind /dev " + quote(root+"/dev") + "; mount -t proc proc " + quote(root+"/proc") + "\n")
	}
	in := func(name string) string { return "chroot " + quote(roots[name]) + " " }
	ag := in("agnhost")
	script.WriteString(ag + "ip link set lo up\nset +e\n" +
		ag + "/agnhost netexec --http-port=8080 --udp-port=8081 >/dev/null 2>&1 &\n" +
		in("nginx") + "/docker-entrypoint.sh nginx -g 'daemon off;' >/dev/null 2>&1 &\n" +
		in("pause") + "/pause & pause=$!\n" +
		"for i in $(seq 100); do " + ag + "curl -s -o /dev/null http://127.0.0.1:8080/ && " +
		ag + "curl -s -o /dev/null http://127.0.0.1:80/ && break; sleep 0.1; done\n" +
		"echo \"curl: $(" + ag + "curl -s --max-time 5 'http://127.0.0.1:8080/echo?msg=curl-ok')\"\n" +
		"echo \"wget: $(" + ag + "wget -T 5 -qO- http://127.0.0.1/ | grep -o 'Welcome to nginx')\"\n" +
		"echo \"nc: $(" + ag + "sh -c 'echo echo nc-udp-ok | nc -u -w 1 127.0.0.1 8081')\"\n" +
		"echo \"busybox: $(" + in("busybox") + "sh -c 'printf \"GET /echo?msg=busybox-ok HTTP/1.0\\r\\n\\r\\n\" | nc 127.0.0.1 8080 | tail -n 1')\"\n" +
		"echo \"busybox wget: $(" + in("busybox") + "wget -qO- http://127.0.0.1/ | grep -o 'Welcome to nginx')\"\n" +
		"echo \"getent: $(" + in("glibc-dns-testing") + "getent passwd root)\"\n" +
		"echo \"conntrack: $(" + in("distroless-iptables") + "sh -c 'conntrack --version')\"\n" +
		"kill -TERM $pause; wait $pause; echo \"pause: exit $?\"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--net", "--mount", "--pid", "--fork", "--mount-proc", "sh", "-c", script.String())
	cmd.Env = []string{imagePath}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("unshare: %v\n%s%s", err, out, stderr.String())
	}
	for _, want := range []string{
		"curl: curl-ok", "wget: Welcome to nginx", "nc: nc-udp-ok", "busybox: busybox-ok", "busybox wget: Welcome to nginx",
		"getent: root:x:0:0:", "conntrack: conntrack v", "pause: exit 0",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in:\n%s%s", want, out, stderr.String())
		}
	}
}
