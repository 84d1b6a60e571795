"""OpenSearch-native hybrid search adapter."""
