"""Reader instructions carried with the librdkafka properties (see sources/kafka_auth.py).

Names only, so that the source's executors read them without importing the config models.
"""

KEYTAB_BASE64 = "streamsift.kerberos.keytab.base64"
KRB5_CONFIG_PATH = "streamsift.kerberos.krb5.config"
KRB5_CONFIG_TEXT = "streamsift.kerberos.krb5.config.text"
TOKEN_PROVIDER = "streamsift.oauthbearer.token.provider"
AWS_MSK_IAM = "aws_msk_iam"
