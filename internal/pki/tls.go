package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// ServerConfig is the TLS configuration of a listener: TLS 1.3, and a
// client certificate from the CA, in date and not revoked, on every
// connection. PeerIdentity then says who the client is.
func (b *Bundle) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{b.Cert},
		// Blocks are bulk: full-size records from the first byte.
		DynamicRecordSizingDisabled: true,
		ClientAuth:                  tls.RequireAnyClientCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, err := b.Check(cs.PeerCertificates, x509.ExtKeyUsageClientAuth)
			return err
		},
	}
}

// ClientConfig is the TLS configuration for dialling the node at addr:
// its certificate must be the CA's, in date, not revoked, and name addr;
// ours is presented. With addr "" any of the CA's certificates is taken
// (a client that dials a site's front-end by name).
func (b *Bundle) ClientConfig(addr string) *tls.Config {
	return b.clientConfig(func(id Identity) error {
		if addr != "" && id.Addr != addr {
			return fmt.Errorf("pki: dialled %s, but the certificate is %s's, for %q", addr, id.Name, id.Addr)
		}
		return nil
	})
}

// NamedClientConfig is the TLS configuration for dialling the holder
// named name (a news front-end, by its Path name): its certificate must be
// the CA's, in date, not revoked, and issued to name.
func (b *Bundle) NamedClientConfig(name string) *tls.Config {
	return b.clientConfig(func(id Identity) error {
		if id.Name != name {
			return fmt.Errorf("pki: dialled %s, but the certificate is %s's", name, id.Name)
		}
		return nil
	})
}

// clientConfig presents our certificate and takes the server's if the CA
// issued it, it is in date and not revoked, and want accepts its holder.
func (b *Bundle) clientConfig(want func(Identity) error) *tls.Config {
	return &tls.Config{
		MinVersion:                  tls.VersionTLS13,
		Certificates:                []tls.Certificate{b.Cert},
		DynamicRecordSizingDisabled: true,
		// Verified below against the CA, with triad's own name check: a
		// node is named by its address in a triad:// URI.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			id, err := b.Check(cs.PeerCertificates, x509.ExtKeyUsageServerAuth)
			if err != nil {
				return err
			}
			return want(id)
		},
	}
}

// PeerIdentity is the identity of the other end of a TLS connection whose
// handshake is complete.
func PeerIdentity(cs tls.ConnectionState) (Identity, error) {
	if !cs.HandshakeComplete || len(cs.PeerCertificates) == 0 {
		return Identity{}, errors.New("pki: no verified peer certificate")
	}
	return IdentityOf(cs.PeerCertificates[0])
}
