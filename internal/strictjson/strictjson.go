// Package strictjson checks that a text is one JSON value that says one
// thing: valid, with nothing after it, and no key twice in one object at
// any depth. encoding/json decodes a repeated key last-wins, so a document
// with one would be read one way by rebound and possibly another by a
// person or another tool; what an agent claims and what a judge scores
// must not be ambiguous.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrSyntax: the text is not valid JSON. ErrTrailing: something follows
// the value.
var (
	ErrSyntax   = errors.New("not valid JSON")
	ErrTrailing = errors.New("text after the JSON value")
)

// DuplicateKeyError names a key that appears twice in one object.
type DuplicateKeyError struct{ Key string }

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("key %q appears twice in one object", e.Key)
}

// Check returns nil when raw is exactly one JSON value with no repeated
// key in any object; else ErrSyntax, ErrTrailing or a *DuplicateKeyError.
func Check(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := walk(dec, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrTrailing
	}
	return nil
}

// maxDepth bounds nesting, as encoding/json's own decoder does, so that
// hostile input cannot grow the stack without bound.
const maxDepth = 10000

func walk(dec *json.Decoder, depth int) error {
	if depth > maxDepth {
		return ErrSyntax
	}
	tok, err := dec.Token()
	if err != nil {
		return ErrSyntax
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return ErrSyntax
			}
			key, _ := k.(string)
			if seen[key] {
				return &DuplicateKeyError{Key: key}
			}
			seen[key] = true
			if err := walk(dec, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return ErrSyntax
		}
	case json.Delim('['):
		for dec.More() {
			if err := walk(dec, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return ErrSyntax
		}
	case json.Delim('}'), json.Delim(']'):
		return ErrSyntax
	}
	return nil
}
