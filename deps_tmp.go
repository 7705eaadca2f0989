package main
import (
 _ "go.temporal.io/sdk/client"
 _ "go.temporal.io/sdk/worker"
 _ "go.temporal.io/sdk/testsuite"
 _ "go.temporal.io/sdk/contrib/opentelemetry"
 _ "github.com/ClickHouse/clickhouse-go/v2"
 _ "github.com/sashabaranov/go-openai"
 _ "go.opentelemetry.io/otel"
 _ "gopkg.in/yaml.v3"
 _ "github.com/ebitengine/purego"
 _ "github.com/stretchr/testify/require"
)
func main(){}
