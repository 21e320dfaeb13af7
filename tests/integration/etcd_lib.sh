# SPDX-License-Identifier: MIT
# etcd_lib.sh — a real etcd for the tests that need one: certificates made
# here by openssl, a 3-member cluster on loopback (tests/tools/etcd-cluster.sh)
# with TLS client URLs, and auth enabled by `nodetune fleet init-auth`.
# Sourced after lib.sh.
#
#   etcd_have                    etcd, etcdctl and openssl are installed
#                                (else t_need, and it returns 1)
#   etcd_ca DIR NAME             a self-signed CA: DIR/NAME.pem, DIR/NAME-key.pem
#   etcd_server_cert DIR CA      DIR/server.pem for 127.0.0.1, signed by CA
#   etcd_client_cert DIR NAME CA a client certificate DIR/NAME.pem (key 0600)
#   etcd_tls_auth_start DIR [HOSTS]
#                                certificates in DIR/certs (CAs ca and other-ca,
#                                the server's, clients client and stranger),
#                                the cluster in DIR/etcd, stopped when the test
#                                ends (t_defer), auth on with the passwords in
#                                DIR/passwords (0700; one file per etcd user)
#                                for the hosts HOSTS (default h1,h2,h3).  Sets
#                                EP (the https endpoints), ETCD_CA (the CA file)
#                                and ETCD_PW (the password dir).  Returns 1,
#                                with a failed check, when any step failed.
#   etcd_as DIR USER ARGS...     etcdctl as USER (the test's own tool)
#   fleetsim_have                etcd_have, the topologies of ../shared and
#                                the simulated hosts' binary ($FLEETSIM,
#                                default build/tests/fleetsim: not built is
#                                a failed check); returns 1 when the test
#                                cannot go on (the caller's t_rest)

etcd_have() {
	if [ ! -x "${ETCD:-/usr/bin/etcd}" ] || ! command -v etcdctl >/dev/null || ! command -v openssl >/dev/null; then
		t_need etcd "etcd, etcdctl or openssl not installed (apt-get install etcd-server etcd-client openssl)"
		return 1
	fi
}

fleetsim_have() {
	etcd_have || return 1
	[ -d "$SHARED" ] || { t_need ../shared "no $SHARED topologies"; return 1; }
	: "${FLEETSIM:=$SRCDIR/build/tests/fleetsim}"
	[ -x "$FLEETSIM" ] || { t_not_ok "$FLEETSIM is built (make build/tests/fleetsim)"; return 1; }
}

etcd_ca() { # DIR NAME
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=nodetune test $2" \
		-keyout "$1/$2-key.pem" -out "$1/$2.pem" 2>/dev/null
}

etcd_server_cert() { # DIR CA
	openssl req -newkey rsa:2048 -nodes -subj "/CN=etcd" -keyout "$1/server-key.pem" -out "$1/server.csr" 2>/dev/null &&
		printf 'subjectAltName = IP:127.0.0.1\nextendedKeyUsage = serverAuth, clientAuth\n' >"$1/ext" &&
		openssl x509 -req -in "$1/server.csr" -CA "$1/$2.pem" -CAkey "$1/$2-key.pem" -CAcreateserial -days 2 \
			-extfile "$1/ext" -out "$1/server.pem" 2>/dev/null
}

etcd_client_cert() { # DIR NAME CA
	openssl req -newkey rsa:2048 -nodes -subj "/CN=nodetune $2" -keyout "$1/$2-key.pem" -out "$1/$2.csr" 2>/dev/null &&
		printf 'extendedKeyUsage = clientAuth\n' >"$1/client-ext" &&
		openssl x509 -req -in "$1/$2.csr" -CA "$1/$3.pem" -CAkey "$1/$3-key.pem" -CAcreateserial -days 2 \
			-extfile "$1/client-ext" -out "$1/$2.pem" 2>/dev/null &&
		chmod 600 "$1/$2-key.pem"
}

etcd_tls_auth_start() { # DIR [HOSTS]
	e_dir=$1 e_hosts=${2:-h1,h2,h3}
	mkdir -p "$e_dir/certs" && mkdir -m 0700 "$e_dir/passwords" || { t_not_ok "etcd: made $e_dir"; return 1; }
	etcd_ca "$e_dir/certs" ca && etcd_ca "$e_dir/certs" other-ca && etcd_server_cert "$e_dir/certs" ca &&
		etcd_client_cert "$e_dir/certs" client ca && etcd_client_cert "$e_dir/certs" stranger other-ca ||
		{ t_not_ok "etcd: openssl made the certificates"; return 1; }
	EP=$(ETCD_TLS=$e_dir/certs tests/tools/etcd-cluster.sh start "$e_dir/etcd") ||
		{ t_not_ok "etcd: the TLS cluster started"; return 1; }
	t_defer "tests/tools/etcd-cluster.sh stop '$e_dir/etcd'"
	ETCD_CA=$e_dir/certs/ca.pem ETCD_PW=$e_dir/passwords
	"$NODETUNE" fleet init-auth --endpoints "$EP" --cacert "$ETCD_CA" --hosts "$e_hosts" \
		--password-dir "$ETCD_PW" >"$e_dir/init-auth.out" 2>&1 ||
		{ t_not_ok "etcd: init-auth: $(tail -n 1 "$e_dir/init-auth.out")"; return 1; }
}

etcd_as() { # DIR USER ARGS...
	e_dir=$1 e_user=$2
	shift 2
	ETCDCTL_API=3 etcdctl --endpoints "$EP" --cacert "$e_dir/certs/ca.pem" \
		--user "$e_user:$(cat "$e_dir/passwords/$e_user")" "$@"
}
