// Package pki is a triad deployment's certificate authority: the CA that
// the sites of one ring share, the certificates it issues to nodes, news
// front-ends and operators, and what a certificate says about its holder.
//
// It implements no paper; it is the trust the papers assume (issue 17:
// sites that trust each other, and nobody else). Every node-to-node and
// site-to-site connection is to be TLS 1.3 with a client certificate from
// the deployment's CA. A certificate names its holder (the subject's
// common name), its site (the organizational unit) and, for a node, the
// address it listens on (a URI SAN triad://HOST:PORT): a node's identity
// on the ring is that address, so a certificate for one node cannot speak
// for another. It also names its role (a URI SAN triad-role:ROLE): node,
// with the vnodes it may run and its machine identity
// (triad-role:node?machine=HEX&vnodes=N), site (a news front-end),
// operator or client; a certificate grants only what it names, and the
// TCP driver enforces it. Revocation is a CRL the CA signs.
//
// Keys are ECDSA P-256; certificates are PEM files. A bundle, the folder
// `triad ca issue` writes, holds ca.pem, cert.pem and key.pem (0600), and
// crl.pem once something is revoked.
package pki
