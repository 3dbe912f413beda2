// TLS between the members of a cluster: mutual TLS, every member presenting a certificate signed
// by the cluster's CA and accepting only peers that do (OpenSSL through Asio's ssl streams).
//
//   RETURN_IF_ERROR(MakeClusterCertificates("neardup-cluster", {"127.0.0.1", "localhost"}, 825));
//   ASSIGN_OR_RETURN(auto ctx, MakeTlsContext(TlsFiles::InDir("neardup-cluster"), TlsRole::kServer));
//
// The identity checked is "a member of this cluster" (a certificate its CA signed), not a host
// name: members find each other by address, and one member certificate may serve every host of a
// development cluster. TLS 1.2 at least; no session tickets (a pooled connection idle between
// calls must carry no bytes nobody asked for: cluster/tier2_client/remote_shard_set.cc checks it).
//
// Thread safety: the functions are pure (and the file system); a context is shared read-only by
// the connections made from it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <boost/asio/ssl/context.hpp>

#include "common/status.h"

namespace neardup::pb {
class TlsConfig;
}

namespace neardup::cluster {

// A member's PEM files: the cluster's CA certificate, its own certificate and private key.
struct TlsFiles {
  std::string ca, cert, key;
  // The files MakeClusterCertificates writes in `dir`: ca.pem, member.pem, member.key.
  static TlsFiles InDir(const std::string& dir);
  static TlsFiles From(const pb::TlsConfig& config);
  // All three given (none given: TLS off); a part of them is an error for MakeTlsContext.
  bool enabled() const { return !ca.empty() || !cert.empty() || !key.empty(); }
};

enum class TlsRole { kServer, kClient };

// A context for one side of mutual TLS: it presents cert/key and verifies the peer against ca
// (a server refuses a client without a certificate). InvalidArgument naming the file when one is
// missing, unreadable, or the key does not match the certificate.
StatusOr<std::shared_ptr<boost::asio::ssl::context>> MakeTlsContext(const TlsFiles& files, TlsRole role);

// HTTPS on the crawlers' API (server side): presents files.cert and files.key; clients are not
// asked for a certificate (writers authenticate by bearer token), so files.ca is not read here
// (it is what the clients verify the server against). InvalidArgument naming a missing or
// unreadable file, or a key that does not match the certificate.
StatusOr<std::shared_ptr<boost::asio::ssl::context>> MakeHttpsServerContext(const TlsFiles& files);

// HTTPS client side: verifies the server's certificate against `ca_file` (empty: the system's
// trusted CAs). The name check against the host asked for is per connection (HttpClient sets it).
// InvalidArgument naming an unreadable CA file.
StatusOr<std::shared_ptr<boost::asio::ssl::context>> MakeHttpsClientContext(const std::string& ca_file);

// Makes a cluster CA (ca.pem, ca.key) and a member certificate it signs (member.pem, member.key;
// for server and client use; subject alternative names: `hosts`, IP addresses or DNS names) in
// `dir`, valid `days` days; EC P-256 keys, SHA-256 signatures, keys written mode 0600. A CA
// already in `dir` signs the new member certificate. IoError naming the file it could not write;
// Internal when OpenSSL fails.
Status MakeClusterCertificates(const std::string& dir, const std::vector<std::string>& hosts, int days);

}  // namespace neardup::cluster
