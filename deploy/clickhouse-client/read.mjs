// Reads a ClickHouse server with the official Node client (@clickhouse/client),
// as a third-party program does. deploy's tests point it at the embedded store
// a worker serves (storage/served) and compare what it reads with the engine.
//
// stdin: {"url", "username", "password", "database", "queries": [{"name", "sql", "params"}]}
// stdout: {"ping": true|false, "results": {name: {"rows": [...]} | {"error": "...", "code": "..."}}}
import { createClient } from '@clickhouse/client'

const chunks = []
for await (const c of process.stdin) chunks.push(c)
const req = JSON.parse(Buffer.concat(chunks).toString('utf8'))

const client = createClient({
  url: req.url,
  username: req.username,
  password: req.password,
  database: req.database,
  request_timeout: 60_000,
})
const out = { ping: false, results: {} }
try {
  const ping = await client.ping()
  out.ping = ping.success
  for (const q of req.queries) {
    try {
      const rs = await client.query({ query: q.sql, format: 'JSONEachRow', query_params: q.params || {} })
      out.results[q.name] = { rows: await rs.json(), query_id: rs.query_id }
    } catch (e) {
      out.results[q.name] = { error: String(e && e.message || e), code: e && e.code }
    }
  }
} finally {
  await client.close()
}
process.stdout.write(JSON.stringify(out))
