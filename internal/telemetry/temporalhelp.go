package telemetry

import (
	"strings"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// The Temporal SDK creates its temporal_* instruments without a
// description, so Prometheus would serve them without HELP (and
// `promtool check metrics` fails on every family). temporalHelp gives
// each family the SDK defines its description; a name the SDK adds later
// gets a generic one rather than none.
var temporalHelp = map[string]string{
	"temporal_workflow_completed":                      "Workflow executions completed successfully",
	"temporal_workflow_canceled":                       "Workflow executions canceled",
	"temporal_workflow_failed":                         "Workflow executions failed",
	"temporal_workflow_continue_as_new":                "Workflow executions continued as new",
	"temporal_workflow_endtoend_latency":               "Workflow execution time from start to close",
	"temporal_workflow_task_replay_latency":            "Time to replay a workflow's history",
	"temporal_workflow_task_queue_poll_empty":          "Workflow task polls that returned no task",
	"temporal_workflow_task_queue_poll_succeed":        "Workflow task polls that returned a task",
	"temporal_workflow_task_schedule_to_start_latency": "Time from a workflow task's scheduling to its start by a worker",
	"temporal_workflow_task_execution_latency":         "Time a worker took to process a workflow task",
	"temporal_workflow_task_execution_failed":          "Workflow tasks that failed",
	"temporal_workflow_task_no_completion":             "Workflow tasks processed without completing",
	"temporal_activity_poll_no_task":                   "Activity task polls that returned no task",
	"temporal_activity_schedule_to_start_latency":      "Time from an activity's scheduling to its start by a worker",
	"temporal_activity_execution_failed":               "Activity executions that failed",
	"temporal_unregistered_activity_invocation":        "Activity tasks for an activity type this worker does not register",
	"temporal_activity_execution_latency":              "Time an activity attempt ran",
	"temporal_activity_succeed_endtoend_latency":       "Time from an activity's scheduling to its success, retries included",
	"temporal_activity_task_error":                     "Activity tasks that failed in the worker itself",
	"temporal_local_activity_total":                    "Local activity executions",
	"temporal_local_activity_canceled":                 "Local activity executions canceled (deprecated name)",
	"temporal_local_activity_execution_cancelled":      "Local activity executions canceled",
	"temporal_local_activity_failed":                   "Local activity executions failed (deprecated name)",
	"temporal_local_activity_execution_failed":         "Local activity executions failed",
	"temporal_local_activity_error":                    "Local activity tasks that failed in the worker itself",
	"temporal_local_activity_execution_latency":        "Time a local activity attempt ran",
	"temporal_local_activity_succeed_endtoend_latency": "Time from a local activity's scheduling to its success",
	"temporal_corrupted_signals":                       "Signals that could not be decoded",
	"temporal_worker_start":                            "Workers started",
	"temporal_worker_task_slots_available":             "Task slots a worker has free, by worker type",
	"temporal_worker_task_slots_used":                  "Task slots a worker has in use, by worker type",
	"temporal_poller_start":                            "Pollers started",
	"temporal_num_pollers":                             "Pollers running, by poller type",
	"temporal_request":                                 "Requests to the Temporal frontend, by operation",
	"temporal_request_failure":                         "Requests to the Temporal frontend that failed, by operation and status code",
	"temporal_request_latency":                         "Latency of requests to the Temporal frontend, by operation",
	"temporal_long_request":                            "Long-poll requests to the Temporal frontend, by operation",
	"temporal_long_request_failure":                    "Long-poll requests to the Temporal frontend that failed",
	"temporal_long_request_latency":                    "Latency of long-poll requests to the Temporal frontend",
	"temporal_request_resource_exhausted":              "Requests the Temporal frontend refused as resource exhausted",
	"temporal_long_request_resource_exhausted":         "Long-poll requests the Temporal frontend refused as resource exhausted",
	"temporal_sticky_cache_hit":                        "Workflow tasks served from the sticky cache",
	"temporal_sticky_cache_miss":                       "Workflow tasks that missed the sticky cache",
	"temporal_sticky_cache_total_forced_eviction":      "Workflows evicted from the sticky cache to make room",
	"temporal_sticky_cache_size":                       "Workflows held in the sticky cache",
	"temporal_workflow_active_thread_count":            "Workflow goroutines running",
	"temporal_nexus_poll_no_task":                      "Nexus task polls that returned no task",
	"temporal_nexus_task_schedule_to_start_latency":    "Time from a Nexus task's scheduling to its start",
	"temporal_nexus_task_execution_failed":             "Nexus tasks that failed",
	"temporal_nexus_task_execution_latency":            "Time a Nexus task ran",
	"temporal_nexus_task_endtoend_latency":             "Time from a Nexus task's scheduling to its completion",
}

// temporalHelpView describes the Temporal SDK's instruments; every other
// instrument is left to the default view.
func temporalHelpView(i sdkmetric.Instrument) (sdkmetric.Stream, bool) {
	if i.Description != "" || !strings.HasPrefix(i.Name, "temporal_") {
		return sdkmetric.Stream{}, false
	}
	help, ok := temporalHelp[i.Name]
	if !ok {
		help = "Temporal SDK metric " + i.Name
	}
	return sdkmetric.Stream{Name: i.Name, Description: help, Unit: i.Unit}, true
}
