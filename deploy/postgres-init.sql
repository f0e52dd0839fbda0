-- Each service owns its database: the provisioners share `levelrail_provisioner` (created
-- by POSTGRES_DB), the credentials service has its own.
CREATE DATABASE levelrail_credentials OWNER levelrail;
