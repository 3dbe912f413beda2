#include "cluster/http/tls.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "proto/config.pb.h"
#include "storage/file_env.h"

namespace neardup::cluster {
namespace {

namespace ssl = boost::asio::ssl;

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "unknown error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

Key NewKey() { return Key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")); }

bool AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for `key`, named `cn`, signed by issuer_key (self-signed when issuer is null).
StatusOr<Cert> NewCertificate(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key, int days,
                              bool ca, const std::vector<std::string>& hosts) {
  Cert cert(X509_new());
  if (!cert) return Internal("tls: " + OpenSslError());
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  std::ifstream("/dev/urandom", std::ios::binary).read(reinterpret_cast<char*>(serial), sizeof(serial));
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);  // an hour of clock skew
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(days) * 86400);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("neardup"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509* as_issuer = issuer != nullptr ? issuer : cert.get();
  bool ok = AddExtension(cert.get(), as_issuer, NID_subject_key_identifier, "hash") &&
            AddExtension(cert.get(), as_issuer, NID_authority_key_identifier, "keyid:always");
  if (ca) {
    ok = ok && AddExtension(cert.get(), as_issuer, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
         AddExtension(cert.get(), as_issuer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    std::string san;
    for (const std::string& h : hosts) {
      const bool ip = !h.empty() && (h.find(':') != std::string::npos || h.find_first_not_of("0123456789.") == std::string::npos);
      if (!san.empty()) san += ',';
      san += ip ? "IP:" : "DNS:";
      san += h;
    }
    ok = ok && AddExtension(cert.get(), as_issuer, NID_basic_constraints, "critical,CA:FALSE") &&
         AddExtension(cert.get(), as_issuer, NID_key_usage, "critical,digitalSignature,keyEncipherment") &&
         AddExtension(cert.get(), as_issuer, NID_ext_key_usage, "serverAuth,clientAuth") &&
         (san.empty() || AddExtension(cert.get(), as_issuer, NID_subject_alt_name, san));
  }
  if (!ok) return Internal("tls: a certificate extension: " + OpenSslError());
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) return Internal("tls: signing: " + OpenSslError());
  return cert;
}

// Writes `pem` to `path` (mode 0600 for a key, 0644 otherwise), replacing it by a rename.
Status WritePem(const std::string& path, const std::string& pem, bool secret) {
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, secret ? 0600 : 0644);
  if (fd < 0) return IoError("tls: cannot create " + tmp);
  bool ok = ::fchmod(fd, secret ? 0600 : 0644) == 0 && ::write(fd, pem.data(), pem.size()) == static_cast<ssize_t>(pem.size()) &&
            ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return IoError("tls: cannot write " + path);
  }
  // The rename durable too: after a power cut the members must find the certificates they used.
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return FileEnv::Default()->SyncDir(dir.empty() ? "." : dir);
}

template <typename Write>
std::string ToPem(Write write) {
  BIO* bio = BIO_new(BIO_s_mem());
  write(bio);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

std::string CertPem(X509* c) {
  return ToPem([c](BIO* b) { PEM_write_bio_X509(b, c); });
}
std::string KeyPem(EVP_PKEY* k) {
  return ToPem([k](BIO* b) { PEM_write_bio_PrivateKey(b, k, nullptr, nullptr, 0, nullptr, nullptr); });
}

}  // namespace

TlsFiles TlsFiles::InDir(const std::string& dir) {
  return {.ca = dir + "/ca.pem", .cert = dir + "/member.pem", .key = dir + "/member.key"};
}

TlsFiles TlsFiles::From(const pb::TlsConfig& c) { return {.ca = c.ca_file(), .cert = c.cert_file(), .key = c.key_file()}; }

namespace {

// TLS 1.2 at least, for either side.
StatusOr<std::shared_ptr<ssl::context>> NewContext(bool server) {
  auto ctx = std::make_shared<ssl::context>(server ? ssl::context::tls_server : ssl::context::tls_client);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                       ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                   ec);
  if (ec) return Internal("tls: options: " + ec.message());
  return ctx;
}

Status RequireFile(const char* what, const std::string& path, const char* give) {
  if (path.empty()) return InvalidArgument(std::string("tls: no ") + what + " file (give " + give + ")");
  if (!std::filesystem::exists(path)) return InvalidArgument("tls: " + path + " does not exist");
  return Status::Ok();
}

// The certificate chain and its key, checked to match.
Status UseIdentity(ssl::context& ctx, const TlsFiles& files) {
  boost::system::error_code ec;
  ctx.use_certificate_chain_file(files.cert, ec);
  if (ec) return InvalidArgument("tls: cannot read the certificate " + files.cert + ": " + ec.message());
  ctx.use_private_key_file(files.key, ssl::context::pem, ec);
  if (ec) return InvalidArgument("tls: cannot read the key " + files.key + ": " + ec.message());
  if (SSL_CTX_check_private_key(ctx.native_handle()) != 1) {
    return InvalidArgument("tls: the key " + files.key + " does not match the certificate " + files.cert);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::shared_ptr<ssl::context>> MakeTlsContext(const TlsFiles& files, TlsRole role) {
  for (const auto& [what, path] : {std::pair{"ca", &files.ca}, {"cert", &files.cert}, {"key", &files.key}}) {
    RETURN_IF_ERROR(RequireFile(what, *path, "ca, cert and key"));
  }
  ASSIGN_OR_RETURN(auto ctx, NewContext(role == TlsRole::kServer));
  boost::system::error_code ec;
  ctx->load_verify_file(files.ca, ec);
  if (ec) return InvalidArgument("tls: cannot read the CA certificate " + files.ca + ": " + ec.message());
  RETURN_IF_ERROR(UseIdentity(*ctx, files));
  ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
  if (ec) return Internal("tls: verify mode: " + ec.message());
  if (role == TlsRole::kServer) SSL_CTX_set_num_tickets(ctx->native_handle(), 0);
  return ctx;
}

StatusOr<std::shared_ptr<ssl::context>> MakeHttpsServerContext(const TlsFiles& files) {
  RETURN_IF_ERROR(RequireFile("cert", files.cert, "cert and key"));
  RETURN_IF_ERROR(RequireFile("key", files.key, "cert and key"));
  ASSIGN_OR_RETURN(auto ctx, NewContext(true));
  RETURN_IF_ERROR(UseIdentity(*ctx, files));
  return ctx;
}

StatusOr<std::shared_ptr<ssl::context>> MakeHttpsClientContext(const std::string& ca_file) {
  ASSIGN_OR_RETURN(auto ctx, NewContext(false));
  boost::system::error_code ec;
  if (ca_file.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec) return Internal("tls: the system's trusted CAs: " + ec.message());
  } else {
    if (!std::filesystem::exists(ca_file)) return InvalidArgument("tls: the CA file " + ca_file + " does not exist");
    ctx->load_verify_file(ca_file, ec);
    if (ec) return InvalidArgument("tls: cannot read the CA certificate " + ca_file + ": " + ec.message());
  }
  ctx->set_verify_mode(ssl::verify_peer, ec);
  if (ec) return Internal("tls: verify mode: " + ec.message());
  return ctx;
}

Status MakeClusterCertificates(const std::string& dir, const std::vector<std::string>& hosts, int days) {
  if (days < 1) return InvalidArgument("tls: a certificate must be valid at least a day");
  std::error_code fec;
  std::filesystem::create_directories(dir, fec);
  if (fec) return IoError("tls: cannot create " + dir + ": " + fec.message());
  const std::string ca_pem = dir + "/ca.pem", ca_key = dir + "/ca.key";
  Key ca_k;
  Cert ca_c;
  if (std::filesystem::exists(ca_pem) && std::filesystem::exists(ca_key)) {
    FILE* f = std::fopen(ca_pem.c_str(), "r");
    if (f != nullptr) ca_c.reset(PEM_read_X509(f, nullptr, nullptr, nullptr)), std::fclose(f);
    f = std::fopen(ca_key.c_str(), "r");
    if (f != nullptr) ca_k.reset(PEM_read_PrivateKey(f, nullptr, nullptr, nullptr)), std::fclose(f);
    if (!ca_c || !ca_k) return InvalidArgument("tls: cannot read the CA in " + dir + ": " + OpenSslError());
  } else {
    ca_k = NewKey();
    if (!ca_k) return Internal("tls: a CA key: " + OpenSslError());
    ASSIGN_OR_RETURN(ca_c, NewCertificate(ca_k.get(), "neardup cluster CA", nullptr, ca_k.get(), days, true, {}));
    RETURN_IF_ERROR(WritePem(ca_key, KeyPem(ca_k.get()), true));
    RETURN_IF_ERROR(WritePem(ca_pem, CertPem(ca_c.get()), false));
  }
  Key member_k = NewKey();
  if (!member_k) return Internal("tls: a member key: " + OpenSslError());
  ASSIGN_OR_RETURN(Cert member_c, NewCertificate(member_k.get(), "neardup member", ca_c.get(), ca_k.get(), days, false, hosts));
  RETURN_IF_ERROR(WritePem(dir + "/member.key", KeyPem(member_k.get()), true));
  return WritePem(dir + "/member.pem", CertPem(member_c.get()), false);
}

}  // namespace neardup::cluster
