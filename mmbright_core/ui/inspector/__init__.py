"""The Inspector page: one query, its images, the ranked documents, why each scored."""
