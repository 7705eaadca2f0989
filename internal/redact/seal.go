package redact

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// EnvKey names the environment variable holding the redaction key: it keys
// the hashes of idempotency keys and, through derived keys, the encryption
// of what rebound must keep but not show (the sweep's plan in storage,
// Temporal payloads). Every process of one deployment needs the same key.
const EnvKey = "REBOUND_REDACTION_KEY"

// MinKeyLen is the shortest accepted redaction key, in bytes.
const MinKeyLen = 32

// ErrNoKey is returned when no usable redaction key is configured.
var ErrNoKey = fmt.Errorf("%s is not set (or shorter than %d characters): every worker and client of a deployment needs the same key, e.g. the output of `openssl rand -hex 32`", EnvKey, MinKeyLen)

// CheckKey validates a redaction key.
func CheckKey(key []byte) error {
	if len(key) < MinKeyLen {
		return ErrNoKey
	}
	return nil
}

// GenerateKey returns a new random key (64 hex characters).
func GenerateKey() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// DeriveKey derives an independent 32-byte key for one purpose from the
// redaction key, so the hash key, the plan key and the payload key never
// coincide.
func DeriveKey(master []byte, purpose string) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte("rebound/" + purpose))
	return m.Sum(nil)
}

// Sealer encrypts and authenticates with AES-256-GCM under a key derived
// from the redaction key.
type Sealer struct {
	aead cipher.AEAD
	id   string
}

// NewSealer builds a sealer for one purpose ("plan", "temporal-payload").
func NewSealer(master []byte, purpose string) (*Sealer, error) {
	if err := CheckKey(master); err != nil {
		return nil, err
	}
	key := DeriveKey(master, purpose)
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	id := sha256.Sum256(append([]byte("key-id:"), key...))
	return &Sealer{aead: aead, id: hex.EncodeToString(id[:4])}, nil
}

// KeyID identifies the derived key (not secret), so a process with another
// key can say so instead of failing to decrypt.
func (s *Sealer) KeyID() string { return s.id }

// Seal returns nonce || ciphertext.
func (s *Sealer) Seal(plain []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, plain, nil), nil
}

// Open reverses Seal.
func (s *Sealer) Open(sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return nil, errors.New("redact: sealed data is too short")
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], nil)
	if err != nil {
		return nil, errors.New("redact: cannot decrypt (sealed with another key?)")
	}
	return plain, nil
}

const sealedPrefix = "sealed:v1:"

// SealString seals text as "sealed:v1:KEYID:BASE64".
func (s *Sealer) SealString(plain []byte) (string, error) {
	b, err := s.Seal(plain)
	if err != nil {
		return "", err
	}
	return sealedPrefix + s.id + ":" + base64.StdEncoding.EncodeToString(b), nil
}

// OpenString reverses SealString; a different key is reported as such.
func (s *Sealer) OpenString(sealed string) ([]byte, error) {
	rest, ok := strings.CutPrefix(sealed, sealedPrefix)
	if !ok {
		return nil, errors.New("redact: not sealed text")
	}
	id, b64, ok := strings.Cut(rest, ":")
	if !ok {
		return nil, errors.New("redact: malformed sealed text")
	}
	if id != s.id {
		return nil, fmt.Errorf("redact: sealed with key %s, this process has key %s: %s differs between processes", id, s.id, EnvKey)
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("redact: malformed sealed text: %w", err)
	}
	return s.Open(b)
}

// SealedField is the member of a stored document (the sweep's plan_json)
// that carries the sealed original.
const SealedField = "sealed"

// SealDocument returns what to store for a JSON object that people may read
// but only key holders may use: the object redacted (red.Value), plus a
// "sealed" member holding the original, encrypted. Readers that ignore
// unknown members see the redacted object.
func SealDocument(red *Redactor, s *Sealer, doc string) (string, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(red.JSONText(doc)), &m); err != nil {
		return "", fmt.Errorf("redact: document is not a JSON object: %w", err)
	}
	sealed, err := s.SealString([]byte(doc))
	if err != nil {
		return "", err
	}
	m[SealedField] = sealed
	out, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// OpenDocument returns the original of a document stored by SealDocument. A
// document without a sealed member (stored before sealing existed) is
// returned as it is.
func OpenDocument(s *Sealer, stored string) (string, error) {
	var probe struct {
		Sealed string `json:"sealed"`
	}
	if err := json.Unmarshal([]byte(stored), &probe); err != nil || probe.Sealed == "" {
		return stored, nil
	}
	if s == nil {
		return "", ErrNoKey
	}
	plain, err := s.OpenString(probe.Sealed)
	if err != nil {
		return "", err
	}
	return string(plain), nil
}
