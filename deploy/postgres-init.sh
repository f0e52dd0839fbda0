#!/bin/sh
# Each service owns its database and its role: the provisioners share
# `levelrail_provisioner`, the credentials service has `levelrail_credentials`, and neither
# role can read the other's database.
set -eu
psql -v ON_ERROR_STOP=1 --username postgres <<SQL
CREATE ROLE levelrail_credentials LOGIN PASSWORD '$(cat /run/secrets/credentials-db-password)';
CREATE ROLE levelrail_provisioner LOGIN PASSWORD '$(cat /run/secrets/provisioner-db-password)';
CREATE DATABASE levelrail_credentials OWNER levelrail_credentials;
CREATE DATABASE levelrail_provisioner OWNER levelrail_provisioner;
REVOKE ALL ON DATABASE levelrail_credentials FROM PUBLIC;
REVOKE ALL ON DATABASE levelrail_provisioner FROM PUBLIC;
SQL
