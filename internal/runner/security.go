package runner

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"go.temporal.io/sdk/client"
)

// Security is how a client authenticates to a Temporal cluster that is not
// the embedded dev server: TLS (server verification with the system roots
// or CAFile, optionally a client certificate for mTLS) and an API key
// (Temporal Cloud), read from the environment variable APIKeyEnv names so
// that it never appears in a command line or a process listing.
type Security struct {
	// TLS turns TLS on with the system roots; any of the fields below
	// turns it on too.
	TLS        bool
	CertFile   string // client certificate (PEM), with KeyFile
	KeyFile    string
	CAFile     string // roots that verify the server (PEM); empty: the system's
	ServerName string // the name the server's certificate must carry; empty: the address's host
	APIKeyEnv  string // the environment variable holding the API key
}

// Enabled says whether any option is set.
func (s Security) Enabled() bool {
	return s.TLS || s.CertFile != "" || s.KeyFile != "" || s.CAFile != "" || s.ServerName != "" || s.APIKeyEnv != ""
}

// Apply sets opts.ConnectionOptions.TLS and opts.Credentials. An API key
// always travels over TLS. Files are read now, so a bad path or PEM fails
// the command before it dials; the client certificate is read again at
// each handshake, so a rotated Secret is picked up on reconnect. Errors
// name files and variables, never their contents.
func (s Security) Apply(opts client.Options, getenv func(string) string) (client.Options, error) {
	if !s.Enabled() {
		return opts, nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.ServerName}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return opts, fmt.Errorf("--temporal-tls-cert and --temporal-tls-key go together (got only one)")
	}
	if s.CertFile != "" {
		certFile, keyFile := s.CertFile, s.KeyFile
		load := func() (*tls.Certificate, error) {
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				//lint:ignore ST1005 the message starts with the product's name, as the user sees it
				return nil, fmt.Errorf("Temporal client certificate %s / key %s: %w", certFile, keyFile, err)
			}
			return &pair, nil
		}
		if _, err := load(); err != nil {
			return opts, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return load() }
	}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			//lint:ignore ST1005 the message starts with the product's name, as the user sees it
			return opts, fmt.Errorf("Temporal CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			//lint:ignore ST1005 the message starts with the product's name, as the user sees it
			return opts, fmt.Errorf("Temporal CA file %s holds no PEM certificate", s.CAFile)
		}
		cfg.RootCAs = pool
	}
	opts.ConnectionOptions.TLS = cfg
	if s.APIKeyEnv != "" {
		key := strings.TrimSpace(getenv(s.APIKeyEnv))
		if key == "" {
			return opts, fmt.Errorf("--temporal-api-key-env names %s, which is empty or unset", s.APIKeyEnv)
		}
		opts.Credentials = client.NewAPIKeyStaticCredentials(key)
	}
	return opts, nil
}
