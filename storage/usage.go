package storage

import (
	"context"
	"encoding/json"
	"fmt"

	"rebound/results/record"
)

// qUsage reads what recent trials consumed (package estimate projects a
// plan's cost from it): each trial's model calls and tokens, summed over
// model_calls, its recorded cost, and the sends of its model requests that
// were never answered (model_requests without a model_calls answer: lost
// in flight), at their bounds. Deduplicated with FINAL (a retried activity
// writes twice).
var qUsage = `SELECT toFloat64(coalesce(m.calls, 0)) AS calls, toFloat64(coalesce(m.prompt_tokens, 0)) AS prompt_tokens,
       toFloat64(coalesce(m.completion_tokens, 0)) AS completion_tokens, t.cost_usd AS cost_usd,
       toFloat64(coalesce(l.lost, 0)) AS lost_calls, toFloat64(coalesce(l.lost_prompt, 0)) AS lost_prompt_tokens,
       toFloat64(coalesce(l.lost_completion, 0)) AS lost_completion_tokens, toFloat64(coalesce(l.lost_usd, 0)) AS lost_cost_usd
FROM
(
    SELECT sweep_id, trial_id, cost_usd
    FROM {{db}}.trials FINAL
    WHERE if({prefix:UInt8} = 1, startsWith(agent, {agent:String}), agent = {agent:String})
      AND attrition = 0 AND has(JSONExtract({scenarios:String}, 'Array(String)'), scenario)
    ORDER BY written_at DESC, trial_id
    LIMIT {limit:UInt64}
) AS t
LEFT JOIN
(
    SELECT sweep_id, trial_id, count() AS calls, sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens
    FROM {{db}}.model_calls FINAL
    GROUP BY sweep_id, trial_id
) AS m ON t.sweep_id = m.sweep_id AND t.trial_id = m.trial_id
LEFT JOIN
(
    SELECT r.sweep_id AS sweep_id, r.trial_id AS trial_id, sum(r.sends - coalesce(c.answered, 0)) AS lost,
           sum((r.sends - coalesce(c.answered, 0)) * r.prompt_bound) AS lost_prompt,
           sum((r.sends - coalesce(c.answered, 0)) * r.completion_bound) AS lost_completion,
           sum((r.sends - coalesce(c.answered, 0)) * r.bound_usd) AS lost_usd
    FROM
    (
        SELECT sweep_id, trial_id, step, generation, count() AS sends,
               max(prompt_tokens_bound) AS prompt_bound, max(completion_tokens_bound) AS completion_bound,
               max((prompt_tokens_bound * input_usd_per_mtok + completion_tokens_bound * output_usd_per_mtok) / 1e6) AS bound_usd
        FROM {{db}}.model_requests FINAL
        GROUP BY sweep_id, trial_id, step, generation
    ) AS r
    LEFT JOIN
    (
        SELECT sweep_id, trial_id, step, generation, toUInt64(1) AS answered
        FROM {{db}}.model_calls FINAL
    ) AS c ON r.sweep_id = c.sweep_id AND r.trial_id = c.trial_id AND r.step = c.step AND r.generation = c.generation
    GROUP BY r.sweep_id, r.trial_id
) AS l ON t.sweep_id = l.sweep_id AND t.trial_id = l.trial_id`

type usageRow struct {
	Calls            float64 `ch:"calls" json:"calls"`
	PromptTokens     float64 `ch:"prompt_tokens" json:"prompt_tokens"`
	CompletionTokens float64 `ch:"completion_tokens" json:"completion_tokens"`
	CostUSD          float64 `ch:"cost_usd" json:"cost_usd"`
	// Lost*: the trial's sends never answered, at their bounds.
	LostCalls            float64 `ch:"lost_calls" json:"lost_calls"`
	LostPromptTokens     float64 `ch:"lost_prompt_tokens" json:"lost_prompt_tokens"`
	LostCompletionTokens float64 `ch:"lost_completion_tokens" json:"lost_completion_tokens"`
	LostCostUSD          float64 `ch:"lost_cost_usd" json:"lost_cost_usd"`
}

func (s *store) Usage(ctx context.Context, sel record.UsageSelect) ([]record.Usage, error) {
	if len(sel.Scenarios) == 0 || sel.Limit <= 0 {
		return nil, nil
	}
	prefix := "0"
	if sel.AgentPrefix {
		prefix = "1"
	}
	var rows []usageRow
	q := Stmt{SQL: s.sql(qUsage), Params: map[string]string{
		"agent": sel.Agent, "prefix": prefix, "scenarios": jsonStrings(sel.Scenarios), "limit": fmt.Sprint(sel.Limit),
	}}
	if err := s.t.Select(ctx, &rows, q); err != nil {
		return nil, fmt.Errorf("storage: Usage of %s: %w", sel.Agent, err)
	}
	out := make([]record.Usage, len(rows))
	for i, r := range rows {
		out[i] = record.Usage(r)
	}
	return out, nil
}

// jsonStrings is a list of free text (scenario names a user wrote) as one
// String parameter, read in SQL with JSONExtract(p, 'Array(String)'). An
// Array(String) parameter cannot carry it: chDB reads an array's quoted
// elements without backslash escapes, a server with them, so a quote or a
// backslash in a name would fail on one transport or match nothing on the
// other (arrayParam serves identifiers only).
func jsonStrings(v []string) string {
	if v == nil {
		v = []string{}
	}
	b, _ := json.Marshal(v) // strings always marshal
	return string(b)
}
