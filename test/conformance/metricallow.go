package conformance

// metricAllowList names kube-proxy's metric families that the tool does
// not export, each with its reason. TestMetricsLikeKubeProxy fails on any
// other family that kube-proxy has and the tool lacks.
var metricAllowList = []MetricAllow{
	// kube-proxy links packages of k8s.io/apiserver (through its config
	// and feature gate code) whose init registers these in component-base's
	// global registry. They count an API server's audit, encryption,
	// webhook and validation work, which kube-proxy never does: they stay 0.
	apiserverLibrary("aggregator_discovery_aggregation_count_total"),
	apiserverLibrary("apiserver_audit_event_total"),
	apiserverLibrary("apiserver_audit_requests_rejected_total"),
	apiserverLibrary("apiserver_envelope_encryption_dek_cache_fill_percent"),
	apiserverLibrary("apiserver_storage_data_key_generation_duration_seconds"),
	apiserverLibrary("apiserver_storage_data_key_generation_failures_total"),
	apiserverLibrary("apiserver_storage_envelope_transformation_cache_misses_total"),
	apiserverLibrary("apiserver_validation_declarative_validation_mismatch_total"),
	apiserverLibrary("apiserver_validation_declarative_validation_panic_total"),
	apiserverLibrary("apiserver_validation_duplicate_validation_error_total"),
	apiserverLibrary("apiserver_webhooks_x509_insecure_sha1_total"),
	apiserverLibrary("apiserver_webhooks_x509_missing_san_total"),

	// component-base's metric stability framework counts its own
	// bookkeeping: metrics registered by stability level, metrics
	// disabled or hidden by --disabled-metrics and
	// --show-hidden-metrics-for-version, label values outside an allow
	// list. The tool has none of that framework, nor those flags.
	stabilityFramework("registered_metrics_total"),
	stabilityFramework("disabled_metrics_total"),
	stabilityFramework("hidden_metrics_total"),
	stabilityFramework("cardinality_enforcement_unexpected_categorizations_total"),
	// client-go observes these for requests other than watches. kube-proxy
	// makes one, the Event it posts when it starts; the tool asks the API
	// server only for its informers' watches, so the families, registered,
	// have no series. metrics' TestRESTClientCountsRequests checks their
	// labels on a request.
	watchOnly("rest_client_request_duration_seconds"),
	watchOnly("rest_client_rate_limiter_duration_seconds"),
	watchOnly("rest_client_request_size_bytes"),
	watchOnly("rest_client_response_size_bytes"),
	{Name: "kubernetes_feature_enabled", Reason: "one series per feature gate of kube-proxy's binary " +
		"(all of Kubernetes' gates, with their stage); the tool has no feature gates: it implements " +
		"v1.37's behaviour with the gates at their defaults"},
}

func apiserverLibrary(name string) MetricAllow {
	return MetricAllow{Name: name, Reason: "registered by k8s.io/apiserver code that kube-proxy links; always 0 in kube-proxy"}
}

func stabilityFramework(name string) MetricAllow {
	return MetricAllow{Name: name, Reason: "component-base's metric stability framework's own bookkeeping, which the tool does not have"}
}

func watchOnly(name string) MetricAllow {
	return MetricAllow{Name: name, Reason: "no series in the tool: observed only for requests other than watches, and kube-proxy's one such request is the Event it posts at start"}
}
