package storage

import "strconv"

// elideQuoteMax is how much of the statement an error may quote.
const elideQuoteMax = 200

// elidedError is err with every long quotation of the statement cut.
type elidedError struct {
	msg string
	err error
}

func (e *elidedError) Error() string { return e.msg }
func (e *elidedError) Unwrap() error { return e.err }

// elideErr bounds what an error repeats of the statement: the engine's
// messages quote the statement (a syntax error quotes everything from the
// failing position on), so a 1 MiB statement made a 1 MiB message. Every
// run of the message that repeats more than elideQuoteMax bytes of the
// statement is cut to its first elideQuoteMax bytes and a count. The error
// still matches what it wrapped (errors.Is, errors.As).
func elideErr(err error, statement string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	cut := elideQuotes(msg, statement, elideQuoteMax)
	if len(cut) == len(msg) {
		return err
	}
	return &elidedError{msg: cut, err: err}
}

// elideQuotes finds the runs of msg that copy statement and keeps at most
// keep bytes of each. Runs are found from k-byte windows of the statement
// (a hash map from window to its first offset), then extended byte by
// byte: linear in both lengths.
func elideQuotes(msg, statement string, keep int) string {
	const k = 32
	if len(statement) <= keep || len(msg) <= keep {
		return msg
	}
	first := make(map[string]int, len(statement)-k+1)
	for i := 0; i+k <= len(statement); i++ {
		if _, ok := first[statement[i:i+k]]; !ok {
			first[statement[i:i+k]] = i
		}
	}
	out := make([]byte, 0, keep*4)
	for i := 0; i < len(msg); {
		if i+k <= len(msg) {
			if j, ok := first[msg[i:i+k]]; ok {
				n := k
				for i+n < len(msg) && j+n < len(statement) && msg[i+n] == statement[j+n] {
					n++
				}
				if n > keep {
					out = append(out, msg[i:i+keep]...)
					out = append(out, "…["...)
					out = strconv.AppendInt(out, int64(n-keep), 10)
					out = append(out, " more bytes of the statement]"...)
					i += n
					continue
				}
			}
		}
		out = append(out, msg[i])
		i++
	}
	return string(out)
}
