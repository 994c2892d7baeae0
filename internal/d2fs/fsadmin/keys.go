package fsadmin

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"triad/internal/d2/key"
)

// Volume keys: a volume's writer holds its ed25519 private key, in a file
// (PKCS #8 in PEM) that mkvol writes and the commands that write read.

// KeyPath is the key file of volume vol (as the user named it): flag if
// set, else VOLUME.key under the user's config directory.
func KeyPath(flag, vol string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no config directory for volume keys (%w): pass --key FILE", err)
	}
	return filepath.Join(dir, "triad", "volumes", vol+".key"), nil
}

// WriteKeyFile writes priv to path, mode 0600, making its directory
// (0700), and syncs it; it never overwrites a file.
func WriteKeyFile(path string, priv ed25519.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s exists: not overwriting a volume key (pass --key with another file)", path)
	}
	if err != nil {
		return err
	}
	err = pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return errors.Join(err, os.Remove(path))
	}
	return nil
}

// ReadKeyFile reads an ed25519 private key written by WriteKeyFile.
func ReadKeyFile(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: not a PEM private key", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an ed25519 key", path)
	}
	return priv, nil
}

// LoadKey reads the private key of volume vol (arg, as the user named
// it) from the file flag names or the default one, checks that it is
// vol's, and gives it to b; without one, an error that says what to do.
func LoadKey(b Store, flag, arg string, vol key.Volume) (ed25519.PrivateKey, error) {
	path, err := KeyPath(flag, arg)
	if err != nil {
		return nil, err
	}
	priv, err := ReadKeyFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("this machine holds no key for volume %s: pass --key, or mount --ro (%s does not exist)", arg, path)
	}
	if err != nil {
		return nil, err
	}
	if got := key.VolumeOfKey(priv.Public().(ed25519.PublicKey)); got != vol {
		return nil, fmt.Errorf("the key in %s is volume %s's, not %s's (%s)", path, got, arg, vol)
	}
	b.AddKey(priv)
	return priv, nil
}
