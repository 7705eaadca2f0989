package storage

import (
	"context"
	"fmt"

	"rebound/results/record"
)

// qUsage reads what recent trials consumed (package estimate projects a
// plan's cost from it): each trial's model calls and tokens, summed over
// model_calls, and its recorded cost. Deduplicated with FINAL (a retried
// activity writes twice).
var qUsage = `SELECT toFloat64(coalesce(m.calls, 0)) AS calls, toFloat64(coalesce(m.prompt_tokens, 0)) AS prompt_tokens,
       toFloat64(coalesce(m.completion_tokens, 0)) AS completion_tokens, t.cost_usd AS cost_usd
FROM
(
    SELECT sweep_id, trial_id, cost_usd
    FROM {{db}}.trials FINAL
    WHERE if({prefix:UInt8} = 1, startsWith(agent, {agent:String}), agent = {agent:String})
      AND attrition = 0 AND has({scenarios:Array(String)}, scenario)
    ORDER BY written_at DESC, trial_id
    LIMIT {limit:UInt64}
) AS t
LEFT JOIN
(
    SELECT sweep_id, trial_id, count() AS calls, sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens
    FROM {{db}}.model_calls FINAL
    GROUP BY sweep_id, trial_id
) AS m ON t.sweep_id = m.sweep_id AND t.trial_id = m.trial_id`

type usageRow struct {
	Calls            float64 `ch:"calls" json:"calls"`
	PromptTokens     float64 `ch:"prompt_tokens" json:"prompt_tokens"`
	CompletionTokens float64 `ch:"completion_tokens" json:"completion_tokens"`
	CostUSD          float64 `ch:"cost_usd" json:"cost_usd"`
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
		"agent": sel.Agent, "prefix": prefix, "scenarios": arrayParam(sel.Scenarios), "limit": fmt.Sprint(sel.Limit),
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
