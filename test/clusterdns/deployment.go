package clusterdns

// deployment is kubeadm's CoreDNS Deployment with one replica, field for
// field. Its securityContext is kubeadm's (all capabilities dropped but
// NET_BIND_SERVICE, no privilege escalation, a read-only root); the
// process runs as root, as the image (Image) has no user, where upstream's
// runs as nonroot with the capability on the file: CoreDNS still binds
// port 53 with NET_BIND_SERVICE alone. system-cluster-critical makes
// kubelet ask oom_score_adj -997, which the lab's runc cannot set:
// containerd raises it to its own (restrict_oom_score_adj, in
// test/kubeletlab's configs.go), as for kube-proxy's
// system-node-critical.
const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: kube-system
  labels:
    k8s-app: kube-dns
spec:
  replicas: 1
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 1
  selector:
    matchLabels:
      k8s-app: kube-dns
  template:
    metadata:
      labels:
        k8s-app: kube-dns
    spec:
      priorityClassName: system-cluster-critical
      serviceAccountName: coredns
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm:
              labelSelector:
                matchExpressions:
                - key: k8s-app
                  operator: In
                  values: ["kube-dns"]
              topologyKey: kubernetes.io/hostname
      tolerations:
      - key: CriticalAddonsOnly
        operator: Exists
      - key: node-role.kubernetes.io/control-plane
        effect: NoSchedule
      nodeSelector:
        kubernetes.io/os: linux
      containers:
      - name: coredns
        image: %s
        imagePullPolicy: IfNotPresent
        resources:
          limits:
            memory: 170Mi
          requests:
            cpu: 100m
            memory: 70Mi
        args: ["-conf", "/etc/coredns/Corefile"]
        volumeMounts:
        - name: config-volume
          mountPath: /etc/coredns
          readOnly: true
        ports:
        - {containerPort: 53, name: dns, protocol: UDP}
        - {containerPort: 53, name: dns-tcp, protocol: TCP}
        - {containerPort: 9153, name: metrics, protocol: TCP}
        - {containerPort: 8080, name: liveness-probe, protocol: TCP}
        - {containerPort: 8181, name: readiness-probe, protocol: TCP}
        livenessProbe:
          httpGet:
            path: /health
            port: liveness-probe
            scheme: HTTP
          initialDelaySeconds: 60
          timeoutSeconds: 5
          successThreshold: 1
          failureThreshold: 5
        readinessProbe:
          httpGet:
            path: /ready
            port: readiness-probe
            scheme: HTTP
        securityContext:
          allowPrivilegeEscalation: false
          capabilities:
            add: [NET_BIND_SERVICE]
            drop: [ALL]
          readOnlyRootFilesystem: true
      dnsPolicy: Default
      volumes:
      - name: config-volume
        configMap:
          name: coredns
          items:
          - key: Corefile
            path: Corefile
`
