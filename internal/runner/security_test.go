package runner

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

// selfSigned writes a self-signed certificate and its key as PEM files.
func selfSigned(t *testing.T, dir, name string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	write(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	write(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
	return certFile, keyFile, cert
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// The tls.Config Apply builds does mutual TLS against a real TLS server:
// it trusts the CA file, checks the server name, and presents the client
// certificate the server requires.
func TestSecurityMutualTLSAgainstAServer(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, clientCert := selfSigned(t, dir, "worker")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(r.TLS.PeerCertificates[0].Subject.CommonName))
	}))
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(clientCert)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are expected
	srv.StartTLS()
	defer srv.Close()
	caFile := filepath.Join(dir, "ca.pem")
	write(t, caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))

	get := func(s Security) (string, error) {
		opts, err := s.Apply(client.Options{}, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: opts.ConnectionOptions.TLS}}
		resp, err := hc.Get(srv.URL)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	// httptest's certificate is for example.com and 127.0.0.1.
	got, err := get(Security{CertFile: certFile, KeyFile: keyFile, CAFile: caFile, ServerName: "example.com"})
	if err != nil || got != "worker" {
		t.Fatalf("mTLS = %q, %v; want the server to see the client certificate", got, err)
	}
	if _, err := get(Security{CertFile: certFile, KeyFile: keyFile, CAFile: caFile, ServerName: "temporal.example.org"}); err == nil {
		t.Fatal("a server name the certificate does not carry was accepted")
	}
	if _, err := get(Security{CertFile: certFile, KeyFile: keyFile, ServerName: "example.com"}); err == nil {
		t.Fatal("a server signed by no system root was trusted without the CA file")
	}
	if _, err := get(Security{CAFile: caFile, ServerName: "example.com"}); err == nil {
		t.Fatal("the server requires a client certificate, yet the handshake passed without one")
	}
}

func TestSecurityOptions(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := selfSigned(t, dir, "worker")
	const secret = "tc-api-key-0123456789abcdefghij"
	env := func(k string) string {
		if k == "TEMPORAL_CLOUD_KEY" {
			return secret
		}
		return ""
	}

	opts, err := Security{}.Apply(client.Options{HostPort: "localhost:7233"}, env)
	if err != nil || opts.ConnectionOptions.TLS != nil || opts.Credentials != nil {
		t.Fatalf("no options: TLS %v, credentials %v, err %v; want a plain connection", opts.ConnectionOptions.TLS, opts.Credentials, err)
	}

	// An API key alone: TLS with the system roots, and the key as credentials.
	opts, err = Security{APIKeyEnv: "TEMPORAL_CLOUD_KEY"}.Apply(client.Options{}, env)
	if err != nil {
		t.Fatal(err)
	}
	if opts.ConnectionOptions.TLS == nil || opts.ConnectionOptions.TLS.RootCAs != nil || opts.ConnectionOptions.TLS.MinVersion != tls.VersionTLS12 {
		t.Fatalf("API key without TLS options: TLS = %+v, want TLS 1.2+ with the system roots", opts.ConnectionOptions.TLS)
	}
	if opts.Credentials == nil {
		t.Fatal("API key set but no credentials")
	}

	opts, err = Security{TLS: true}.Apply(client.Options{}, env)
	if err != nil || opts.ConnectionOptions.TLS == nil || opts.Credentials != nil {
		t.Fatalf("--temporal-tls: TLS %v, credentials %v, err %v", opts.ConnectionOptions.TLS, opts.Credentials, err)
	}

	for _, tc := range []struct {
		s    Security
		want string
	}{
		{Security{APIKeyEnv: "UNSET_KEY"}, "UNSET_KEY"},
		{Security{CertFile: certFile}, "go together"},
		{Security{CertFile: certFile, KeyFile: filepath.Join(dir, "missing.key")}, "missing.key"},
		{Security{CertFile: keyFile, KeyFile: keyFile}, "client certificate"},
		{Security{CAFile: keyFile}, "no PEM certificate"},
		{Security{CAFile: filepath.Join(dir, "nope.pem")}, "nope.pem"},
	} {
		_, err := tc.s.Apply(client.Options{}, env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want one naming %q", tc.s, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("an error carries the API key: %v", err)
		}
	}
}
