package report

import (
	"errors"
	"testing"
)

func TestCheckMetrics(t *testing.T) {
	if err := CheckMetrics(DefaultTrendMetrics); err != nil {
		t.Fatalf("default metrics: %v", err)
	}
	if err := CheckMetrics(MetricNames()); err != nil {
		t.Fatalf("reported metrics: %v", err)
	}
	err := CheckMetrics([]string{MetricHarm, "speed"})
	if !errors.Is(err, ErrUnknownMetric) || err.Error() != `unknown metric "speed"` {
		t.Fatalf("err = %v", err)
	}
}
